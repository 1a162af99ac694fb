package waitgraph

import (
	"context"
	"fmt"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Verify is the second pass: it re-reads every claim of c, the waiting
// claim and the holder of each edge, and tells whether each is still
// unended (package doc). It stops at the first one ended. The caller
// still confirms, locally, that the set of c's first edge waits with the
// claim of its note.
func Verify(ctx context.Context, r Reader, c Cycle) (bool, error) {
	if len(c) == 0 {
		return false, nil
	}
	for _, claim := range c.Claims() {
		ok, err := r.Unended(ctx, claim)
		if err != nil {
			return false, fmt.Errorf("waitgraph: re-reading %s@%d: %w", claim.Key, claim.Epoch, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// Check is Find, then Verify of what it found: found is true only for a
// cycle through set that Verify confirmed.
func Check(ctx context.Context, r Reader, set string) (c Cycle, found bool, err error) {
	c, found, err = Find(ctx, r, set)
	if err != nil || !found {
		return nil, false, err
	}
	if ok, err := Verify(ctx, r, c); err != nil || !ok {
		return nil, false, err
	}
	return c, true, nil
}

// Claims returns the 2L claims of c: for each edge, its waiting claim,
// then its holder.
func (c Cycle) Claims() []driver.ClaimRef {
	out := make([]driver.ClaimRef, 0, 2*len(c))
	for _, e := range c {
		out = append(out, e.Waiting(), e.Holder.Claim)
	}
	return out
}

// Victim is the set of c that is to give up its wait: the one of the
// greatest (Since, Set) among its edges' notes (package doc). It is ""
// for an empty cycle.
func (c Cycle) Victim() string {
	var v *driver.Wait
	for i := range c {
		n := &c[i].Note
		if v == nil || younger(n, v) {
			v = n
		}
	}
	if v == nil {
		return ""
	}
	return v.Set
}

// younger tells whether a's (Since, Set) is greater than b's.
func younger(a, b *driver.Wait) bool {
	if !a.Since.Equal(b.Since) {
		return a.Since.After(b.Since)
	}
	return a.Set > b.Set
}

// Record returns the edges of c as a deadlock record stores them.
func (c Cycle) Record() []driver.DeadlockEdge {
	out := make([]driver.DeadlockEdge, len(c))
	for i, e := range c {
		out[i] = driver.DeadlockEdge{Set: e.Note.Set, Key: e.Note.Key, Epoch: e.Note.Epoch, HeldBy: e.Holder.Waiter, Token: e.Holder.Claim.Epoch}
	}
	return out
}
