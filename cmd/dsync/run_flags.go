package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// runFlags are the flags that dsync lock and dsync once share: the
// lease's --ttl, the command's --grace once the hold ends, and how long
// to --wait for the hold (0: as long as it takes).
type runFlags struct {
	ttl, grace, wait time.Duration
}

// register adds the flags to fs, with their defaults.
func (f *runFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.ttl, "ttl", dsync.DefaultTTL, "")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "")
	fs.DurationVar(&f.wait, "wait", 0, "")
}

// validate says what is wrong with the flags' values, if anything.
func (f runFlags) validate() error {
	switch {
	case f.grace <= 0:
		return fmt.Errorf("--grace must be positive, got %v", f.grace)
	case f.wait < 0:
		return fmt.Errorf("--wait must not be negative, got %v", f.wait)
	}
	return nil
}
