package dsyncmongo

import (
	"time"

	"github.com/go-dsync/dsync/internal/chain"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// withClient applies test-only settings to the Backend's Client.
func withClient(s clienthook.Settings) Option {
	return func(c *config) error { return clienthook.MongoOption(s).(Option)(c) }
}

// withRelockWindow sets how long a Mutex that locks again after a
// takeover waits at most for the owner it took over from.
func withRelockWindow(d time.Duration) Option {
	return withClient(clienthook.Settings{RelockWindow: d})
}

// withChain sets the protocol's timing constants, so that a test can see
// pruning within seconds.
func withChain(c chain.Config) Option { return withClient(clienthook.Settings{Chain: &c}) }

// withBug plants a bug in the Backend's engine.
func withBug(b chain.Bug) Option { return withClient(clienthook.Settings{Bug: b}) }

// raw returns b's protocol calls, one by one.
func (b *Backend) raw() clienthook.Raw { return clienthook.RawOf(b) }
