package dsync

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/dsync/internal/enginehook"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// What tests of other packages may set: a store wrapped by
// clienthook.Wrap (package internal/clienthook) carries a Client's
// dsync-level test settings, which packages outside dsync may set; one
// wrapped in an enginehook.Store (dsync/internal/enginehook) carries its
// engine's, and may ask for its protocol calls one by one. Users cannot
// name either, so they cannot reach these settings.

// hooked is the store clienthook.Wrap returns: store, carrying settings.
type hooked struct {
	driver.Store
	settings clienthook.Settings
}

func init() {
	clienthook.Carry = func(store any, s clienthook.Settings) any {
		st, ok := store.(driver.Store)
		if !ok {
			panic(fmt.Sprintf("dsync: clienthook.Wrap(%T), not a driver.Store", store))
		}
		return &hooked{Store: st, settings: s}
	}
}

// testSettings are a Client's clienthook.Settings (see there) as dsync
// reads them, with the fields clienthook holds as an any asserted to
// their types. The Clock is the lease's (takeHooks).
type testSettings struct {
	relockWindow time.Duration
	wrapStore    func(driver.Store) driver.Store
	hints        func(*hint.Feed)
	settled      func()
	judgedOver   func()
}

// settledNow runs the settled hook, if any.
func (t *testSettings) settledNow() {
	if t.settled != nil {
		t.settled()
	}
}

// typed returns s with its any fields asserted, panicking at a field of
// another type: only a test can set one, and its mistake is plain there.
func typed(s clienthook.Settings) *testSettings {
	t := &testSettings{relockWindow: s.RelockWindow, judgedOver: s.JudgedOver, settled: s.Settled}
	if s.WrapStore != nil {
		f, ok := s.WrapStore.(func(driver.Store) driver.Store)
		if !ok {
			panic(fmt.Sprintf("dsync: clienthook.Settings.WrapStore is a %T, not a func(driver.Store) driver.Store", s.WrapStore))
		}
		t.wrapStore = f
	}
	if s.Hints != nil {
		f, ok := s.Hints.(func(*hint.Feed))
		if !ok {
			panic(fmt.Sprintf("dsync: clienthook.Settings.Hints is a %T, not a func(*hint.Feed)", s.Hints))
		}
		t.hints = f
	}
	return t
}

// takeHooks keeps the test-only settings that store carries in
// clienthook.Wrap's and *enginehook.Store wrappers, in either order
// (none otherwise), and returns the store beneath them.
func (c *clientConfig) takeHooks(store driver.Store) driver.Store {
	c.test = &testSettings{}
	for {
		switch h := store.(type) {
		case *hooked:
			c.test, store = typed(h.settings), h.Store
			if h.settings.Clock != nil {
				c.lease.Clock = h.settings.Clock
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
	return r.c.claim(ctx, key, owner, session, "", queue.ExclusiveTerms, try)
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
