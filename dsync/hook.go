package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/chain"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// What tests of other packages may set (package internal/clienthook): a
// store wrapped in a clienthook.Store carries a Client's test-only
// settings, and may ask for its protocol calls one by one. Users cannot
// name the type, so they cannot reach these settings.

// takeHooks keeps the test-only settings that store carries, if it is a
// *clienthook.Store (none otherwise), and returns the store beneath.
func (c *clientConfig) takeHooks(store driver.Store) driver.Store {
	h, ok := store.(*clienthook.Store)
	if !ok {
		c.test = &clienthook.Settings{}
		return store
	}
	s := h.Settings
	c.test = &s
	if s.Chain != nil {
		c.chain = *s.Chain
	}
	return h.Store
}

// raw is a Client's clienthook.Raw.
type raw struct{ c *Client }

func (r raw) OpenSession(ctx context.Context, ttl time.Duration) (string, error) {
	return r.c.openSession(ctx, ttl)
}

func (r raw) RenewSession(ctx context.Context, session string, ttl time.Duration) error {
	return r.c.renewSession(ctx, session, ttl)
}

func (r raw) Claim(ctx context.Context, key, owner, session string, try bool) (chain.Ref, error) {
	return r.c.claim(ctx, key, owner, session, chain.ExclusiveTerms, try)
}

func (r raw) Await(ctx context.Context, c chain.Ref) error {
	_, err := r.c.await(ctx, c, nil)
	return err
}

func (r raw) End(ctx context.Context, c chain.Ref, held bool) error {
	return r.c.end(ctx, c, held)
}

func (r raw) Look(ctx context.Context, key string) error {
	if err := r.c.prepare(ctx); err != nil {
		return err
	}
	_, err := r.c.eng.Queue(ctx, key)
	return err
}
