package dsync

import (
	"context"
	"errors"
	"sync"
	"time"
)

// memoryPollInterval caps how long a waiter sleeps between attempts on the
// in-memory backend when a release does not wake it: a waiter that started
// waiting just after the release, or a waiter that does not use WaitFree.
const memoryPollInterval = 100 * time.Millisecond

// MemoryBackend is a Backend that keeps its state in process memory, for
// unit tests of code that uses dsync. It follows the same protocol as the
// MongoDB backend: each hold is a new epoch whose number is the fencing
// token, an unreleased epoch blocks others until it expires, and only the
// owner renews or releases its epoch. Expiry uses the time package, so
// tests under testing/synctest run on fake time.
//
// It coordinates only the goroutines of one process; it is safe for
// concurrent use. The zero value is not usable; call NewMemoryBackend.
type MemoryBackend struct {
	mu    sync.Mutex
	keys  map[string]*memoryEpoch  // the newest epoch of each key
	freed map[string]chan struct{} // closed when the key's epoch is released
}

type memoryEpoch struct {
	token    uint64
	owner    string
	expires  time.Time
	released bool
}

var (
	_ Backend = (*MemoryBackend)(nil)
	_ Waiter  = (*MemoryBackend)(nil)
)

// NewMemoryBackend returns an empty in-memory backend.
func NewMemoryBackend() *MemoryBackend {
	return &MemoryBackend{keys: make(map[string]*memoryEpoch), freed: make(map[string]chan struct{})}
}

// Acquire implements Backend.
func (b *MemoryBackend) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (Lease, error) {
	if err := validate(ctx, key, ttl); err != nil {
		return Lease{}, err
	}
	if owner == "" {
		return Lease{}, errors.New("dsync: empty owner")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	cur := b.keys[key]
	if cur != nil && !cur.released && now.Before(cur.expires) && cur.owner != owner {
		return Lease{}, &HeldError{
			Key:        key,
			Owner:      cur.owner,
			Token:      cur.token,
			RetryAfter: min(cur.expires.Sub(now)+time.Nanosecond, memoryPollInterval),
		}
	}
	var token uint64 = 1
	if cur != nil {
		token = cur.token + 1
	}
	b.keys[key] = &memoryEpoch{token: token, owner: owner, expires: now.Add(ttl)}
	return Lease{Key: key, Owner: owner, Token: token}, nil
}

// Renew implements Backend.
func (b *MemoryBackend) Renew(ctx context.Context, ttl time.Duration, leases []Lease) ([]bool, error) {
	if err := validate(ctx, "-", ttl); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	applied := make([]bool, len(leases))
	for i, l := range leases {
		// Like an update of the lease's own epoch document: it applies while
		// that epoch is the newest and unreleased, even if it has expired
		// and nobody has taken over yet. The expiry only grows, as on
		// dsync/mongo, where a renewal may be applied after later ones.
		cur := b.keys[l.Key]
		if cur != nil && cur.token == l.Token && cur.owner == l.Owner && !cur.released {
			cur.expires = later(cur.expires, now.Add(ttl))
			applied[i] = true
		}
	}
	return applied, nil
}

// Release implements Backend.
func (b *MemoryBackend) Release(ctx context.Context, lease Lease) error {
	if err := validate(ctx, lease.Key, time.Second); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.keys[lease.Key]; cur != nil && cur.token == lease.Token && cur.owner == lease.Owner {
		cur.released = true
		if c, ok := b.freed[lease.Key]; ok {
			close(c)
			delete(b.freed, lease.Key)
		}
	}
	return nil
}

// WaitFree implements Waiter: it returns when held.Key is released, or
// after held.RetryAfter (which covers expiry), or when ctx ends.
func (b *MemoryBackend) WaitFree(ctx context.Context, held *HeldError) error {
	b.mu.Lock()
	c, ok := b.freed[held.Key]
	if !ok {
		c = make(chan struct{})
		b.freed[held.Key] = c
	}
	cur := b.keys[held.Key]
	released := cur == nil || cur.released || cur.token != held.Token
	b.mu.Unlock()
	if released {
		return nil // changed since the attempt that saw it held
	}
	t := time.NewTimer(max(held.RetryAfter, time.Millisecond))
	defer t.Stop()
	select {
	case <-c:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Holder returns the lease that currently holds key, if any: the newest
// epoch, unless it was released or has expired.
func (b *MemoryBackend) Holder(key string) (Lease, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.keys[key]
	if cur == nil || cur.released || !time.Now().Before(cur.expires) {
		return Lease{}, false
	}
	return Lease{Key: key, Owner: cur.owner, Token: cur.token}, true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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
