package main

import (
	"errors"
	"time"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
)

// idleAgeOptions returns the dsyncmongo options that make a backend
// compact the keys nobody held or awaited for age (-idle-age; 0: none).
//
// The hook for issue 25's compaction of idle keys: this tree's dsyncmongo
// has no such option yet, so a nonzero age is refused. Once the option
// exists, return it here, e.g.
//
//	return []dsyncmongo.Option{dsyncmongo.WithIdleAge(age)}, nil
//
// and the scale scenario waits for the compaction before it counts the
// documents and measures (harness.IdleCompactor).
func idleAgeOptions(age time.Duration) ([]dsyncmongo.Option, error) {
	if age == 0 {
		return nil, nil
	}
	return nil, errors.New("-idle-age: this tree's dsyncmongo cannot compact idle keys yet (no WithIdleAge; see compaction.go)")
}
