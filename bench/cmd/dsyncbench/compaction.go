package main

import (
	"time"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
)

// idleAgeOptions returns the dsyncmongo options that make a backend
// compact the keys nobody held or awaited for age (-idle-age; 0: none):
// the idle age, and a bucket span of a quarter of it (the shortest the
// idle age allows), so that the scale scenario waits little for it.
func idleAgeOptions(age time.Duration) ([]dsyncmongo.Option, error) {
	if age == 0 {
		return nil, nil
	}
	return []dsyncmongo.Option{dsyncmongo.WithIdleAge(age), dsyncmongo.WithBucketSpan(age / 4)}, nil
}

// noCompaction is the option of the scale scenario's namespace of keys
// in the collection: its backends do not sweep.
func noCompaction() []dsyncmongo.Option { return []dsyncmongo.Option{dsyncmongo.WithIdleAge(0)} }
