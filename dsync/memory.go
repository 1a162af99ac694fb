package dsync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-dsync/dsync/internal/chain"
)

// memoryPollInterval caps how long a waiter on the in-memory backend waits
// without news: the end it waits for is announced at once, so this only
// bounds the wait for a claim whose session expired.
const memoryPollInterval = 100 * time.Millisecond

// MemoryBackend is a Backend that keeps its state in process memory, for
// unit tests of code that uses dsync. It runs the same protocol as the
// MongoDB backend (package internal/chain): sessions, a FIFO queue of
// claims per key whose epochs are the fencing tokens, end markers. Time is
// the time package's, so tests under testing/synctest run on fake time.
//
// It coordinates only the goroutines of one process; it is safe for
// concurrent use. The zero value is not usable; call NewMemoryBackend.
type MemoryBackend struct {
	store  *chain.MemStore
	eng    *chain.Engine
	resend *chain.Resender
	start  time.Time // carries the monotonic reading the clock counts from
	base   time.Time // start without it: the origin of server time

	mu      sync.Mutex
	changed map[string]chan struct{} // closed when a claim of the key ends
}

var _ Backend = (*MemoryBackend)(nil)

// NewMemoryBackend returns an empty in-memory backend.
func NewMemoryBackend() *MemoryBackend {
	start := time.Now()
	b := &MemoryBackend{start: start, base: start.Round(0), changed: make(map[string]chan struct{})}
	b.store = chain.NewMemStore(b.inserted)
	eng, err := chain.New(b.store, memoryClock{b}, chain.DefaultConfig())
	if err != nil {
		panic(err) // the default configuration is valid
	}
	b.eng = eng
	b.resend = chain.NewResender(eng, nil)
	return b
}

// memoryClock: the server's time is this process's, known exactly. It
// counts from the backend's creation on the monotonic clock, as a Mutex's
// deadlines do, so that setting the machine's wall clock forward cannot
// make a live session look expired.
type memoryClock struct{ b *MemoryBackend }

func (c memoryClock) ServerNow() chain.Interval {
	now := c.b.base.Add(time.Since(c.b.start))
	return chain.Interval{Earliest: now, Latest: now}
}

func (c memoryClock) Mono() time.Duration { return time.Since(c.b.start) }

// inserted wakes the waiters of a key when one of its claims ends.
func (b *MemoryBackend) inserted(d chain.Doc) {
	if d.Kind == chain.KindClaim {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.changed[d.Key]; ok {
		close(c)
		delete(b.changed, d.Key)
	}
}

func (b *MemoryBackend) changes(key string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.changed[key]
	if !ok {
		c = make(chan struct{})
		b.changed[key] = c
	}
	return c
}

// OpenSession implements Backend.
func (b *MemoryBackend) OpenSession(ctx context.Context, ttl time.Duration) (string, error) {
	if err := validate(ctx, "-", ttl); err != nil {
		return "", err
	}
	id, _, err := b.eng.OpenSession(ctx, ttl)
	return id, err
}

// RenewSession implements Backend. Like the MongoDB backend's, a renewal
// only ever raises the session's expiry.
func (b *MemoryBackend) RenewSession(ctx context.Context, session string, ttl time.Duration) error {
	if err := validate(ctx, "-", ttl); err != nil {
		return err
	}
	found, _, err := b.eng.RenewSession(ctx, session, ttl)
	if err == nil && !found {
		return fmt.Errorf("%w: %s", ErrSessionGone, session)
	}
	return err
}

// Claim implements Backend.
func (b *MemoryBackend) Claim(ctx context.Context, key, owner, session string, try bool) (Claim, error) {
	if err := validate(ctx, key, time.Second); err != nil {
		return Claim{}, err
	}
	if owner == "" || session == "" {
		return Claim{}, errors.New("dsync: empty owner or session")
	}
	return claim(ctx, b.eng, key, owner, session, try)
}

// resetError marks an error of the engine that says the store lost the
// key's history (chain.ErrReset) as ErrReset.
func resetError(err error) error {
	if errors.Is(err, chain.ErrReset) {
		return fmt.Errorf("%w: %w", ErrReset, err)
	}
	return err
}

// claim runs Claim (or, with try, TryClaim) on eng.
func claim(ctx context.Context, eng *chain.Engine, key, owner, session string, try bool) (Claim, error) {
	var (
		c   *chain.Claim
		err error
	)
	if try {
		c, err = eng.TryClaim(ctx, key, owner, session)
	} else {
		c, err = eng.Claim(ctx, key, owner, session, false)
	}
	var busy *chain.BusyError
	if errors.As(err, &busy) {
		return Claim{}, &HeldError{Key: key, Owner: busy.Blocker.Owner, Token: busy.Blocker.Epoch}
	}
	if err != nil {
		return Claim{}, resetError(err)
	}
	return Claim{Key: key, Owner: owner, Session: session, Token: c.Epoch, Nonce: c.Nonce}, nil
}

// Await implements Backend.
func (b *MemoryBackend) Await(ctx context.Context, c Claim) error {
	cc := chain.Resume(c.Key, c.Owner, c.Session, c.Nonce, c.Token)
	for {
		changed := b.changes(c.Key)
		head, blocker, err := b.eng.Walk(ctx, cc)
		if err != nil || head {
			return resetError(err)
		}
		// Wait for an end of a claim of the key, or until the blocker's
		// session can have expired.
		wait := min(blocker.ExpiresAt.Sub(memoryClock{b}.ServerNow().Earliest)+time.Millisecond, memoryPollInterval)
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		t.Stop()
	}
}

// End implements Backend.
func (b *MemoryBackend) End(ctx context.Context, c Claim, held bool) error {
	if err := validate(ctx, c.Key, time.Second); err != nil {
		return err
	}
	err := b.eng.End(ctx, chain.Resume(c.Key, c.Owner, c.Session, c.Nonce, c.Token), held)
	if err != nil {
		b.resend.Kick() // sent again in the background until it lands
	}
	return err
}

// Holder returns the claim at the head of key's queue, if any: the one
// that holds, or is about to.
func (b *MemoryBackend) Holder(key string) (Claim, bool) {
	d, ok, err := b.eng.Head(context.Background(), key)
	if err != nil || !ok {
		return Claim{}, false
	}
	return Claim{Key: key, Owner: d.Owner, Session: d.Session, Token: d.Epoch, Nonce: d.Nonce}, true
}

func validate(ctx context.Context, key string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if key == "" {
		return errors.New("dsync: empty key")
	}
	if ttl <= 0 {
		return errors.New("dsync: TTL must be positive")
	}
	return nil
}
