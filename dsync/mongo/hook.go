package dsyncmongo

import (
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/mongohook"
)

// What tests of other packages may set on a Store (internal/mongohook).
func init() {
	mongohook.ReadRuns = func(s driver.Store) { s.(*Store).cfg.tests().readRuns = true }
}
