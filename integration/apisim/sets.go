package apisim

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/lockset"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// The lock-set actor (Options.Sets): a worker locks a lockset.Set of
// Mutexes of a few keys (setKeys), given in any order, all at once
// (LockContext, now and then TryLockContext), holds it a while and, more
// often than not, grows it with LockMore (a key or two more, in any
// order), once or more, before it unlocks: an incremental locker, whose
// waits out of the global order close cycles with other Sets. Most Sets
// detect deadlocks (lockset.WithDeadlockTimeout). Each member's hold is
// a Hold like any other, which every checker judges (exclusion and
// tokens among them); check_sets.go judges what is the Sets' own: all
// or nothing, and that a deadlock broken was one, of which the youngest
// gave up; check_set_cycles.go, from the claims that landed, that no
// cycle of waits outlasts what lockset's documentation promises.

// setShare is the chance that a worker's next operation is the lock-set
// actor's, in a run with Options.Sets.
const setShare = 0.5

// setKeys are the keys the Sets lock: few, so that Sets meet and close
// cycles. "m0" is also the single Mutex's (ops.go): Sets wait behind
// single lockers and single lockers behind Sets.
var setKeys = []string{"m0", "s0", "s1", "s2"}

// SetRun is one Set's life as its worker saw it: its Lock (or TryLock)
// and the LockMores of the holding it made, up to its Unlock.
type SetRun struct {
	Proc int
	Who  string        // the worker
	D    time.Duration // its deadlock timeout (0: detection off)
	// ID is the Set's identity, the Waiter of its claims (one per Lock
	// call, kept by its LockMores): filled once the run is over, from the
	// claims that landed (empty if none did).
	ID    string
	Calls []*SetCall
}

// SetCall is one call of a Set: "lock", "try" or "more".
type SetCall struct {
	Op string
	// Keys are the members it locks, in the order given (as stored), and
	// Owners their Mutexes' owners, as their claims name them.
	Keys, Owners []string
	Call, Return time.Time
	Err          error
	// Deadlock is a LockMore's *DeadlockError: its Set was the youngest of
	// a cycle and gave up its wait.
	Deadlock *lockset.DeadlockError
	// What the Set and its members showed as the call returned: the
	// Set's Tokens and Err, the token of each member of Keys (Mutex.Token:
	// 0 when it holds none), and of each member the Set had before the
	// call (Kept, a LockMore's).
	Tokens, Held, Kept []uint64
	SetErr             error
	// Closed: the Set's Client had begun to close when the call returned
	// (its process restarted, or the run ended): what the call left in
	// the store, the Client's Close ends.
	Closed bool
}

// lockSet is one operation of the actor: a Set's life.
func (inc *incarnation) lockSet(ctx context.Context, who string) {
	w := inc.p.w
	keys := w.pickSetKeys(nil, 1+int(w.rand(0, 3)))
	run := &SetRun{Proc: inc.p.id, Who: who, D: inc.deadlockTimeout()}
	s, ms, err := inc.ps.lockSet(keys, run.D)
	if err != nil {
		panic(err)
	}
	w.mu.Lock()
	w.hist.SetRuns = append(w.hist.SetRuns, run)
	w.mu.Unlock()
	op := "lock"
	if w.chance(0.1) {
		op = "try"
	}
	c := w.setCall(run, op, keys, ms)
	lctx, cancel := context.WithTimeout(ctx, inc.setWait(run.D))
	if op == "try" {
		err = s.TryLockContext(lctx)
	} else {
		err = s.LockContext(lctx)
	}
	cancel()
	inc.setReturned(c, s, ms, nil, err)
	w.count(setOutcome(op, err))
	if err != nil {
		return
	}
	giveUps := inc.holdMembers(run, c, s, c.Tokens)
	sleepCtx(ctx, inc.holdFor())
	giveUps, unlocked := inc.growSet(ctx, run, s, keys, ms, giveUps)
	for _, g := range giveUps {
		g()
	}
	if unlocked {
		return
	}
	uctx, ucancel := inc.unlockCtx()
	defer ucancel()
	_ = s.UnlockContext(uctx)
}

// growSet grows s, held with members ms of keys, by LockMore, now and
// then, holding it a while after each: it returns the give-ups of every
// member's hold, and whether s was unlocked (the youngest of a deadlock:
// a LockMore returned its *DeadlockError).
func (inc *incarnation) growSet(ctx context.Context, run *SetRun, s *lockset.Set, keys []string, ms []*dsync.Mutex, giveUps []func()) ([]func(), bool) {
	w := inc.p.w
	for more := w.chance(0.6); more && ctx.Err() == nil && len(keys) < len(setKeys); more = w.chance(0.35) {
		add := w.pickSetKeys(keys, 1+int(w.rand(0, 2)))
		am, members, err := inc.ps.setMembers(add)
		if err != nil {
			panic(err)
		}
		c := w.setCall(run, "more", add, am)
		mctx, cancel := context.WithTimeout(ctx, inc.setWait(run.D))
		err = s.LockMore(mctx, members...)
		cancel()
		inc.setReturned(c, s, am, ms, err)
		w.count(setOutcome("more", err))
		if c.Deadlock != nil {
			return giveUps, true
		}
		if err != nil || len(c.Tokens) != len(keys)+len(add) {
			break
		}
		giveUps = append(giveUps, inc.holdMembers(run, c, s, c.Tokens[len(keys):])...)
		keys, ms = append(keys, add...), append(ms, am...)
		sleepCtx(ctx, inc.holdFor())
	}
	return giveUps, false
}

// holdMembers records the holds of c's members, with tokens (theirs,
// in the order of c.Keys), which began now, and returns their give-ups.
func (inc *incarnation) holdMembers(run *SetRun, c *SetCall, s *lockset.Set, tokens []uint64) []func() {
	if len(tokens) != len(c.Keys) {
		return nil // not all or nothing: CheckSets says so
	}
	var giveUps []func()
	for i, k := range c.Keys {
		h := &Hold{Who: run.Who + "/" + c.Owners[i], Prim: PrimMutex, Key: k, Token: tokens[i], Call: c.Call, Try: c.Op == "try", Set: run}
		giveUps = append(giveUps, inc.hold(h, s.Lost()))
	}
	return giveUps
}

// setWait is how long a Set's Lock or LockMore may wait: with detection
// on (d > 0), from 3 to 10 TTLs, so that a deadlock not broken within
// its bound (check_set_cycles.go) outlasts it before the wait's context
// ends.
func (inc *incarnation) setWait(d time.Duration) time.Duration {
	if d == 0 {
		return inc.waitFor()
	}
	ttl := inc.p.cfg.TTL
	return inc.p.w.rand(3*ttl, 10*ttl)
}

// deadlockTimeout draws a Set's deadlock timeout: off for one in five,
// else from half the TTL to the TTL (at most the TTL: lockset.New
// refuses more).
func (inc *incarnation) deadlockTimeout() time.Duration {
	w, ttl := inc.p.w, inc.p.cfg.TTL
	if w.chance(0.2) {
		return 0
	}
	return (ttl/2 + w.rand(0, ttl/2)).Truncate(time.Millisecond)
}

// pickSetKeys draws n keys of setKeys that are not in held (fewer if
// fewer are left), in a drawn order.
func (w *world) pickSetKeys(held []string, n int) []string {
	var free []string
	for _, k := range setKeys {
		if !contains(held, k) {
			free = append(free, k)
		}
	}
	var out []string
	for _, i := range w.perm(len(free), true) {
		if len(out) < n {
			out = append(out, free[i])
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// setCall records that a call op of run began now, on the members ms of
// keys.
func (w *world) setCall(run *SetRun, op string, keys []string, ms []*dsync.Mutex) *SetCall {
	c := &SetCall{Op: op, Keys: keys, Call: time.Now()}
	for _, m := range ms {
		c.Owners = append(c.Owners, clienthook.OwnerOf(m))
	}
	w.mu.Lock()
	run.Calls = append(run.Calls, c)
	w.mu.Unlock()
	return c
}

// setReturned records that c returned now with err: what s, its members
// ms of the call and those it kept showed then, and whether the Client
// was closing.
func (inc *incarnation) setReturned(c *SetCall, s *lockset.Set, ms, kept []*dsync.Mutex, err error) {
	inc.mu.Lock()
	closed := !inc.closeAt.IsZero()
	inc.mu.Unlock()
	w := inc.p.w
	held, had := make([]uint64, len(ms)), make([]uint64, len(kept))
	for i, m := range ms {
		held[i] = m.Token()
	}
	for i, m := range kept {
		had[i] = m.Token()
	}
	tokens, setErr := s.Tokens(), s.Err()
	var de *lockset.DeadlockError
	errors.As(err, &de)
	w.mu.Lock()
	defer w.mu.Unlock()
	c.Return, c.Err, c.Deadlock, c.Closed = time.Now(), err, de, closed
	c.Tokens, c.Held, c.Kept, c.SetErr = tokens, held, had, setErr
	switch {
	case err == nil && c.Op == "more":
		w.fig.SetsGrown++
	case err == nil:
		w.fig.SetsGranted++
	case de != nil:
		w.fig.SetDeadlocks++
	}
}

// setOutcome names a Set's call's outcome for the figures.
func setOutcome(op string, err error) string {
	if errors.Is(err, lockset.ErrDeadlock) {
		return "set-" + op + " deadlock"
	}
	return outcome("set-"+op, err)
}
