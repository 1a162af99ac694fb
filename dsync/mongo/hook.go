package dsyncmongo

import (
	"fmt"

	"github.com/go-dsync/dsync/internal/mongohook"
)

// What tests of other packages may set on a Store (internal/mongohook).
func init() {
	mongohook.ReadRuns = func(s any) {
		st, ok := s.(*Store)
		if !ok {
			panic(fmt.Sprintf("dsyncmongo: mongohook.ReadRuns(%T), not a *Store", s))
		}
		st.cfg.tests().readRuns = true
	}
}
