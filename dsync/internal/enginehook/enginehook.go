// Package enginehook lets the tests of dsync's drivers set what only
// tests may set on a dsync.Client's protocol engine: its timing
// constants, a planted bug, and its protocol calls one by one. The
// settings ride on the store given to dsync.NewClient (Store), beside or
// beneath the dsync-level ones of internal/clienthook. It lives under
// dsync/internal because its types are the engine's, which only dsync's
// own packages may name; it holds no state.
package enginehook

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// Settings are a Client's engine settings for tests; zero fields are
// left as they are.
type Settings struct {
	// Chain, if set, replaces the engine's settings (its timing
	// constants and bucket span).
	Chain *queue.Config
	// Bug plants a bug in the Client's engine.
	Bug queue.Bug
	// Raw, if set, is given the Client's protocol calls when it is made.
	Raw func(Raw)
}

// Store is a store that carries Settings to the dsync.Client made over
// it: dsync.NewClient applies them and uses Store beneath, which may be
// an internal/clienthook.Store carrying dsync-level settings (and the
// other way round).
type Store struct {
	driver.Store
	Settings Settings
}

// Raw is a Client's protocol calls beneath its primitives, one call each,
// for tests of drivers and of the protocol through them.
type Raw interface {
	OpenSession(ctx context.Context, ttl time.Duration) (string, error)
	// RenewSession wraps dsync.ErrSessionGone when the session is gone.
	RenewSession(ctx context.Context, session string, ttl time.Duration) error
	// Claim returns a *dsync.HeldError when try is set and the key is
	// held.
	Claim(ctx context.Context, key, owner, session string, try bool) (queue.Ref, error)
	Await(ctx context.Context, c queue.Ref) error
	End(ctx context.Context, c queue.Ref, held bool) error
	// Look reads key's queue as a claimer's walk does, learning the gate
	// that covers the key now (and ending claims it finds dead), which a
	// Client's Queue, a read that writes nothing, does not.
	Look(ctx context.Context, key string) error
}
