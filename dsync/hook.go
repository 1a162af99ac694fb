package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/enginehook"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// What tests of other packages may set: a store wrapped in a
// clienthook.Store (package internal/clienthook) carries a Client's
// dsync-level test settings, which packages outside dsync may set; one
// wrapped in an enginehook.Store (dsync/internal/enginehook) carries its
// engine's, and may ask for its protocol calls one by one. Users cannot
// name either type, so they cannot reach these settings.

// takeHooks keeps the test-only settings that store carries in
// *clienthook.Store and *enginehook.Store wrappers, in either order
// (none otherwise), and returns the store beneath them.
func (c *clientConfig) takeHooks(store driver.Store) driver.Store {
	c.test = &clienthook.Settings{}
	for {
		switch h := store.(type) {
		case *clienthook.Store:
			s := h.Settings
			c.test, store = &s, h.Store
			if s.Clock != nil {
				c.lease.Clock = s.Clock
			}
		case *enginehook.Store:
			c.engineTest, store = h.Settings, h.Store
			if h.Settings.Chain != nil {
				c.engine = *h.Settings.Chain
			}
		default:
			return store
		}
	}
}

// raw is a Client's enginehook.Raw.
type raw struct{ c *Client }

func (r raw) OpenSession(ctx context.Context, ttl time.Duration) (string, error) {
	return r.c.openSession(ctx, ttl)
}

func (r raw) RenewSession(ctx context.Context, session string, ttl time.Duration) error {
	return r.c.renewSession(ctx, session, ttl)
}

func (r raw) Claim(ctx context.Context, key, owner, session string, try bool) (queue.Ref, error) {
	return r.c.claim(ctx, key, owner, session, queue.ExclusiveTerms, try)
}

func (r raw) Await(ctx context.Context, c queue.Ref) error {
	_, err := r.c.await(ctx, c, nil)
	return err
}

func (r raw) End(ctx context.Context, c queue.Ref, held bool) error {
	return r.c.end(ctx, c, held)
}

func (r raw) Look(ctx context.Context, key string) error {
	if err := r.c.prepare(ctx); err != nil {
		return err
	}
	_, err := r.c.eng.Queue(ctx, key)
	return err
}
