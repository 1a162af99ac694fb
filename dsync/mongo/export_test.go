package dsyncmongo

import (
	"time"

	"github.com/go-dsync/dsync/internal/chain"
)

// withRelockWindow sets how long a Mutex that locks again after a
// takeover waits at most for the owner it took over from (relock.go).
func withRelockWindow(d time.Duration) Option {
	return func(cfg *config) error {
		cfg.relockWindow = d
		return nil
	}
}

// withChain sets the protocol's timing constants, so that a test can see
// pruning within seconds.
func withChain(c chain.Config) Option {
	return func(cfg *config) error {
		cfg.chain = c
		return nil
	}
}
