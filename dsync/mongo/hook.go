package dsyncmongo

import (
	"fmt"

	"github.com/go-dsync/dsync/internal/clienthook"
)

// What tests of other packages may set on a Store (internal/clienthook.MongoReadRuns).
func init() {
	clienthook.MongoReadRuns = func(s any) {
		st, ok := s.(*Store)
		if !ok {
			panic(fmt.Sprintf("dsyncmongo: clienthook.MongoReadRuns(%T), not a *Store", s))
		}
		st.cfg.tests().readRuns = true
	}
}
