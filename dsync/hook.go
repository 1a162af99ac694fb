package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/internal/chain"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// What tests of other packages may reach (package internal/clienthook):
// a Client's test-only settings, and its protocol calls one by one.
func init() {
	clienthook.Option = func(s clienthook.Settings) any {
		return ClientOption(func(c *clientConfig) error {
			if s.Chain != nil {
				c.chain = *s.Chain
			}
			if s.Bug != 0 {
				c.bug = s.Bug
			}
			if s.RelockWindow > 0 {
				c.relockWindow = s.RelockWindow
			}
			if s.WrapStore != nil {
				c.wrapStore = s.WrapStore
			}
			return nil
		})
	}
	clienthook.RawOf = func(b any) clienthook.Raw { return raw{b.(Backend).Client()} }
	clienthook.Namespace = func(ns string) any { return ownNamespace(ns) }
}

// raw is a Client's clienthook.Raw.
type raw struct{ c *Client }

func (r raw) OpenSession(ctx context.Context, ttl time.Duration) (string, error) {
	return r.c.openSession(ctx, ttl)
}

func (r raw) RenewSession(ctx context.Context, session string, ttl time.Duration) error {
	return r.c.renewSession(ctx, session, ttl)
}

func (r raw) Claim(ctx context.Context, key, owner, session string, try bool) (clienthook.Claim, error) {
	c, err := r.c.claim(ctx, key, owner, session, chain.ExclusiveTerms, try)
	return clienthook.Claim(c), err
}

func (r raw) Await(ctx context.Context, c clienthook.Claim) error {
	_, err := r.c.await(ctx, claimRef(c))
	return err
}

func (r raw) End(ctx context.Context, c clienthook.Claim, held bool) error {
	return r.c.end(ctx, claimRef(c), held)
}
