package main

import (
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// idleAgeOptions returns the Client options that make a Client compact
// the keys nobody held or awaited for age (-idle-age; 0: none): the idle
// age, and a bucket span of a quarter of it (the shortest the idle age
// allows), so that the scale scenario waits little for it.
func idleAgeOptions(age time.Duration) ([]dsync.ClientOption, error) {
	if age == 0 {
		return nil, nil
	}
	return []dsync.ClientOption{dsync.ClientWithIdleAge(age), dsync.ClientWithBucketSpan(age / 4)}, nil
}

// noCompaction is the option of the scale scenario's namespace of keys
// in the collection: its Clients do not sweep.
func noCompaction() []dsync.ClientOption { return []dsync.ClientOption{dsync.ClientWithIdleAge(0)} }
