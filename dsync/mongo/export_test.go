package dsyncmongo

import "github.com/go-dsync/dsync/internal/chain"

// withChain sets the protocol's timing constants, so that a test can see
// pruning within seconds.
func withChain(c chain.Config) Option {
	return func(cfg *config) error {
		cfg.chain = c
		return nil
	}
}
