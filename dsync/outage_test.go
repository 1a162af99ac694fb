package dsync_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/suspend"
)

// Holds across an outage of the store (ClientWithOutageGrace), on the
// store in memory: processes cut off all at once (an outage of the
// store) or one alone (a partition), in a synctest bubble.

const (
	outTTL   = 3 * time.Second
	outGrace = 30 * time.Second
)

// outageWorld is processes on one store in memory, each with a grace.
type outageWorld struct {
	store   *memory.Store
	clients []*dsync.MemClient
	// ctx ends at close: the waiters' locks end with the test.
	ctx    context.Context
	cancel context.CancelFunc
}

func newOutageWorld(n int, grace time.Duration, opts ...dsync.ClientOption) *outageWorld {
	w := &outageWorld{store: memory.New()}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	for range n {
		o := append([]dsync.ClientOption{dsync.ClientWithTTL(outTTL), dsync.ClientWithOutageGrace(grace)}, opts...)
		w.clients = append(w.clients, dsync.NewMemClientOn(w.store, o...))
	}
	return w
}

// down cuts every process off the store (up: reachable again).
func (w *outageWorld) down(down bool) {
	for _, c := range w.clients {
		c.Proc.SetReachable(!down)
	}
}

// hang makes the store stop answering every process (answer: again),
// which then applies the writes given up on meanwhile, late.
func (w *outageWorld) hang(hang bool) {
	for _, c := range w.clients {
		c.Proc.SetAnswering(!hang)
	}
}

func (w *outageWorld) close() {
	w.cancel()
	for _, c := range w.clients {
		_ = c.Close()
	}
}

// locker locks m in a goroutine of its own: the channel gets its result.
func locker(ctx context.Context, m *dsync.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.LockContext(ctx) }()
	return done
}

// awaitLocked waits for locker's result (done), at most limit: the test
// fails with its error, or with failure if none came in time.
func awaitLocked(t *testing.T, done <-chan error, limit time.Duration, failure string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(limit):
		t.Fatal(failure)
	}
}

// lockedBy reports whether done has a result yet, and which.
func lockedBy(done <-chan error) (error, bool) {
	select {
	case err := <-done:
		return err, true
	default:
		return nil, false
	}
}

// waitLost waits for m's Lost, at most limit.
func waitLost(t *testing.T, m *dsync.Mutex, limit time.Duration) {
	t.Helper()
	select {
	case <-m.Lost():
	case <-time.After(limit):
		t.Fatalf("Lost still open %v into the outage", limit)
	}
}

// TestOutageRelockSameToken: an outage of the whole store for three
// TTLs, a holder and a waiter in another process. The hold is lost at its
// deadline (ErrLost and ErrSuspended); LockContext called again without
// Unlock waits for the verdict, and once the store is back takes the
// hold back with the same token and a fresh Lost(); the waiter holds
// nothing meanwhile, and takes the key, with a larger token, only at the
// holder's Unlock. Without the re-take, LockContext waits for an Unlock
// that never comes.
func TestOutageRelockSameToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(2, outGrace)
		defer w.close()
		a, b := newMutex(t, w.clients[0].Client, "k"), newMutex(t, w.clients[1].Client, "k")
		a.Lock()
		tok := a.Token()
		waiter := locker(w.ctx, b)
		time.Sleep(outTTL / 2)
		synctest.Wait()

		w.down(true)
		waitLost(t, a, outTTL)
		if err := a.Err(); !errors.Is(err, dsync.ErrLost) || !errors.Is(err, dsync.ErrSuspended) {
			t.Fatalf("Err after the deadline in the outage = %v; want ErrLost and ErrSuspended", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 6*outTTL)
		defer cancel()
		relock := locker(ctx, a)
		time.Sleep(3 * outTTL)
		synctest.Wait()
		if err, ok := lockedBy(relock); ok {
			t.Fatalf("LockContext returned %v in the outage; want it waiting for the verdict", err)
		}
		w.down(false)
		select {
		case err := <-relock:
			if err != nil {
				t.Fatalf("LockContext after the outage = %v; want the hold back", err)
			}
		case <-time.After(outTTL):
			t.Fatal("LockContext still waiting a TTL after the store came back")
		}
		if got := a.Token(); got != tok {
			t.Errorf("the token after the re-lock = %d; want %d, the same", got, tok)
		}
		select {
		case <-a.Lost():
			t.Fatal("the re-taken hold's Lost is closed")
		default:
		}
		if err := a.Err(); err != nil {
			t.Errorf("Err of the re-taken hold = %v; want nil", err)
		}
		time.Sleep(2 * outTTL) // held on, renewed
		synctest.Wait()
		if err, ok := lockedBy(waiter); ok {
			t.Fatalf("the waiter's LockContext returned %v while the re-taken hold held", err)
		}
		if err := a.UnlockContext(context.Background()); err != nil {
			t.Fatalf("Unlock of the re-taken hold = %v", err)
		}
		if err := <-waiter; err != nil {
			t.Fatal(err)
		}
		if b.Token() <= tok {
			t.Errorf("the waiter's token %d; want above %d", b.Token(), tok)
		}
		b.Unlock()
	})
}

// TestCutAloneRelockEnds: one holder cut off alone while the store stays
// up for the others: its waiter in another process takes over, and the
// holder's LockContext, once it reaches the store again, returns an error
// wrapping ErrLost that says the hold ended, with the Mutex unlocked.
func TestCutAloneRelockEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(2, outGrace)
		defer w.close()
		a, b := newMutex(t, w.clients[0].Client, "k"), newMutex(t, w.clients[1].Client, "k")
		a.Lock()
		tok := a.Token()
		waiter := locker(w.ctx, b)
		time.Sleep(outTTL / 2)
		synctest.Wait()

		w.clients[0].Proc.SetReachable(false)
		cut := time.Now()
		waitLost(t, a, outTTL)
		ctx, cancel := context.WithTimeout(context.Background(), 8*outTTL)
		defer cancel()
		relock := locker(ctx, a)
		awaitLocked(t, waiter, 4*outTTL, "the waiter did not take over from a holder cut off alone")
		took := time.Since(cut)
		if b.Token() <= tok {
			t.Errorf("the waiter's token %d; want above %d", b.Token(), tok)
		}
		w.clients[0].Proc.SetReachable(true)
		select {
		case err := <-relock:
			if !errors.Is(err, dsync.ErrLost) || !strings.Contains(err.Error(), "ended") {
				t.Fatalf("the cut-off holder's LockContext = %v; want an error wrapping ErrLost that says the hold ended", err)
			}
		case <-time.After(2 * outTTL):
			t.Fatal("the cut-off holder's LockContext still waiting two TTLs after it reached the store")
		}
		if a.Token() != 0 {
			t.Errorf("the Mutex after its hold ended holds token %d; want it unlocked", a.Token())
		}
		t.Logf("taken over %v after the cut (TTL %v)", took, outTTL)
		b.Unlock()
	})
}

// TestCutAloneLockLocksAnew: Lock, which has no error to return, called
// again by a holder cut off alone, locks anew once it learns that its
// hold ended: after the waiter that took over unlocks, with a larger
// token (LockContext's error would make Lock panic).
func TestCutAloneLockLocksAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(2, outGrace)
		defer w.close()
		a, b := newMutex(t, w.clients[0].Client, "k"), newMutex(t, w.clients[1].Client, "k")
		a.Lock()
		waiter := locker(w.ctx, b)
		time.Sleep(outTTL / 2)
		w.clients[0].Proc.SetReachable(false)
		waitLost(t, a, outTTL)
		relocked := make(chan struct{})
		go func() {
			a.Lock()
			close(relocked)
		}()
		if err := <-waiter; err != nil {
			t.Fatal(err)
		}
		w.clients[0].Proc.SetReachable(true)
		time.Sleep(2 * outTTL)
		synctest.Wait()
		select {
		case <-relocked:
			t.Fatal("Lock returned while the waiter that took over held the key")
		default:
		}
		tok := b.Token()
		b.Unlock()
		<-relocked
		if a.Token() <= tok {
			t.Errorf("the token of the Lock made anew = %d; want above the waiter's %d", a.Token(), tok)
		}
		a.Unlock()
	})
}

// TestGraceZeroRelockWaitsForUnlock: without a grace nothing changes: a
// hold lost in an outage wraps ErrLost only, and LockContext called
// again without Unlock waits for the Unlock, as ever (here until its
// context ends).
func TestGraceZeroRelockWaitsForUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(1, 0)
		defer w.close()
		a := newMutex(t, w.clients[0].Client, "k")
		a.Lock()
		w.down(true)
		waitLost(t, a, outTTL)
		if err := a.Err(); !errors.Is(err, dsync.ErrLost) || errors.Is(err, dsync.ErrSuspended) {
			t.Fatalf("Err at grace 0 = %v; want ErrLost, not ErrSuspended", err)
		}
		w.down(false)
		ctx, cancel := context.WithTimeout(context.Background(), 3*outTTL)
		defer cancel()
		if err := a.LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("LockContext after Lost at grace 0 = %v; want it waiting for the Unlock until ctx ends", err)
		}
		if err := a.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Fatalf("Unlock = %v; want ErrLost", err)
		}
		a.Lock()
		if err := a.Err(); err != nil {
			t.Fatalf("Err after Lock anew = %v", err)
		}
		a.Unlock()
	})
}

// TestUnlockWhileSuspendedKeepsOthers: a process holding two keys in an
// outage unlocks one while suspended; the store holds requests back and
// applies them when it answers again. The release of the claim waits for
// the verdict: sent at once, it would land at the store's return, before
// the check reads the claims back, and have the whole session found
// ended, the other hold with it. The other Mutex re-locks with its token,
// and the unlocked key's waiter takes it soon after the return.
func TestUnlockWhileSuspendedKeepsOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(2, outGrace)
		defer w.close()
		a1, a2 := newMutex(t, w.clients[0].Client, "k1"), newMutex(t, w.clients[0].Client, "k2")
		b := newMutex(t, w.clients[1].Client, "k1")
		a1.Lock()
		a2.Lock()
		tok2 := a2.Token()
		waiter := locker(w.ctx, b)
		time.Sleep(outTTL / 2)
		synctest.Wait()

		w.hang(true)
		waitLost(t, a1, outTTL)
		if err := a1.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Fatalf("Unlock of a suspended hold = %v; want ErrLost", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 8*outTTL)
		defer cancel()
		relock := locker(ctx, a2)
		time.Sleep(3 * outTTL)
		synctest.Wait()
		w.hang(false)
		back := time.Now()
		if err := <-relock; err != nil {
			t.Fatalf("the other Mutex's LockContext after the outage = %v; want its hold back", err)
		}
		if a2.Token() != tok2 {
			t.Errorf("the other Mutex's token = %d; want %d", a2.Token(), tok2)
		}
		awaitLocked(t, waiter, outTTL, "the waiter of the key unlocked in the outage did not hold within a TTL of the store's return")
		t.Logf("the waiter held %v after the store came back", time.Since(back))
		b.Unlock()
		a2.Unlock()
	})
}

// TestResumedNotRelockedIsReleased: a program that ignores Lost() and
// never locks again: once the store is back the hold's claim is kept a
// TTL for a re-lock, then released, and the waiter takes the key; a
// LockContext after that says the hold was released, and unlocks the
// Mutex. Without the release, the kept claim would keep the session, and
// the key, forever.
func TestResumedNotRelockedIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(2, outGrace)
		defer w.close()
		a, b := newMutex(t, w.clients[0].Client, "k"), newMutex(t, w.clients[1].Client, "k")
		a.Lock()
		waiter := locker(w.ctx, b)
		time.Sleep(outTTL / 2)
		synctest.Wait()

		w.down(true)
		waitLost(t, a, outTTL)
		time.Sleep(3 * outTTL)
		w.down(false)
		back := time.Now()
		awaitLocked(t, waiter, 4*outTTL, "the key of a resumed hold never locked again was not released")
		if d := time.Since(back); d < outTTL {
			t.Errorf("the waiter held %v after the store came back; want the kept claim kept a TTL (%v) first", d, outTTL)
		}
		ctx, cancel := context.WithTimeout(context.Background(), outTTL)
		defer cancel()
		err := a.LockContext(ctx)
		if !errors.Is(err, dsync.ErrLost) || !strings.Contains(err.Error(), "released") {
			t.Fatalf("LockContext after the release = %v; want ErrLost, saying it was released", err)
		}
		if a.Token() != 0 {
			t.Errorf("the Mutex holds token %d; want it unlocked", a.Token())
		}
		b.Unlock()
	})
}

// TestRelockByAnotherGoroutine shows the hazard that Mutex.LockContext
// documents: a Mutex belongs to no goroutine, so a second goroutine that
// locks after the first's hold was lost to a suspension, before the
// first's Unlock, takes the first's hold back with the same token (with
// no grace it would wait for that Unlock).
func TestRelockByAnotherGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(1, outGrace)
		defer w.close()
		m := newMutex(t, w.clients[0].Client, "k")
		var firstTok atomic.Uint64
		first := make(chan struct{})
		go func() { // the first goroutine: holds, and is told to stop
			m.Lock()
			firstTok.Store(m.Token())
			close(first)
			<-m.Lost()
		}()
		<-first
		w.down(true)
		waitLost(t, m, outTTL)
		time.Sleep(outTTL)
		w.down(false)
		// The second goroutine (this one) locks before the first unlocks.
		ctx, cancel := context.WithTimeout(context.Background(), 2*outTTL)
		defer cancel()
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("the second goroutine's LockContext = %v; want the first's hold taken back", err)
		}
		if got := m.Token(); got != firstTok.Load() {
			t.Fatalf("the second goroutine's token = %d; want the first's, %d", got, firstTok.Load())
		}
		m.Unlock()
	})
}

// TestOutageGraceBounds: the option's bounds.
func TestOutageGraceBounds(t *testing.T) {
	for _, c := range []struct {
		grace time.Duration
		opts  []dsync.ClientOption
		ok    bool
	}{
		{0, nil, true},
		{30 * time.Second, nil, true},
		{-time.Second, nil, false},
		{10*time.Minute + time.Millisecond, []dsync.ClientOption{dsync.ClientWithBucketSpan(time.Hour)}, false},
		{10 * time.Minute, []dsync.ClientOption{dsync.ClientWithBucketSpan(time.Hour)}, true},
		{time.Second + time.Microsecond, nil, false},
		// Span 5 min, TTL 15 s: at most 5 min − 15 s − 2 s.
		{5*time.Minute - 17*time.Second, nil, true},
		{5*time.Minute - 17*time.Second + time.Millisecond, nil, false},
	} {
		opts := append([]dsync.ClientOption{dsync.ClientWithOutageGrace(c.grace)}, c.opts...)
		cl, err := dsync.NewClient(memory.New(), opts...)
		if (err == nil) != c.ok {
			t.Errorf("ClientWithOutageGrace(%v) with %d options: %v; want ok %v", c.grace, len(c.opts), err, c.ok)
		}
		if cl != nil {
			_ = cl.Close()
		}
	}
}

// TestSuspendedOnTheLeaseClock: the engine's clock is the lease's (here
// a test's, counting a machine's sleep that the store's time does not
// see), so that a suspension takes the lease's deadline to the engine's
// clock exactly (queue.Engine.SuspendOn): the machine sleeps through an
// outage of the store, far past the hold's deadline; the hold is
// suspended, and LockContext takes it back with the same token. Were the
// engine's clock the system's, blind to that sleep, the deadline taken to
// it would fall before every renewal's reply, no expiry confirmed before
// it would be known, and the session would be retired, not suspended.
func TestSuspendedOnTheLeaseClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, sleepFor := suspend.Fake()
		w := newOutageWorld(1, outGrace, dsync.WithClock(dsync.SuspendClock(counter)))
		defer w.close()
		a := newMutex(t, w.clients[0].Client, "k")
		a.Lock()
		tok := a.Token()
		time.Sleep(outTTL / 2)
		w.down(true)
		sleepFor(10 * outTTL)
		waitLost(t, a, time.Second)
		if err := a.Err(); !errors.Is(err, dsync.ErrSuspended) {
			t.Fatalf("Err after the machine's sleep = %v; want ErrSuspended", err)
		}
		w.down(false)
		ctx, cancel := context.WithTimeout(context.Background(), 2*outTTL)
		defer cancel()
		if err := a.LockContext(ctx); err != nil || a.Token() != tok {
			t.Fatalf("LockContext after the outage = %v, token %d; want the hold back with token %d", err, a.Token(), tok)
		}
		a.Unlock()
		time.Sleep(2 * outTTL) // the counter's timers (the kept claim's) run out
	})
}

// TestKeptReleaseLandingLate: the release of a kept claim that no
// re-lock took over within a TTL is sent just as the store stops
// answering, and lands late, when it answers again, in a second outage.
// The claim it ends is no longer the session's (let go when the release
// was sent): the second suspension checks only the other hold, which its
// Mutex takes back with its token, and the released key's waiter takes
// it.
func TestKeptReleaseLandingLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(2, outGrace)
		defer w.close()
		a1, a2 := newMutex(t, w.clients[0].Client, "k1"), newMutex(t, w.clients[0].Client, "k2")
		b := newMutex(t, w.clients[1].Client, "k1")
		a1.Lock()
		a2.Lock()
		tok2 := a2.Token()
		waiter := locker(w.ctx, b)
		time.Sleep(outTTL / 2)
		synctest.Wait()

		relock := func() error {
			ctx, cancel := context.WithTimeout(w.ctx, 8*outTTL)
			defer cancel()
			return a2.LockContext(ctx)
		}
		w.hang(true) // the first outage
		waitLost(t, a1, outTTL)
		done := make(chan error, 1)
		go func() { done <- relock() }()
		time.Sleep(3 * outTTL)
		w.hang(false)
		if err := <-done; err != nil || a2.Token() != tok2 {
			t.Fatalf("a2's LockContext after the first outage = %v, token %d; want its hold back, token %d", err, a2.Token(), tok2)
		}
		// a1 never locks again: a TTL after the verdict its claim is let
		// go and its release sent, into a store that stops answering.
		time.Sleep(outTTL - time.Millisecond)
		w.hang(true)
		time.Sleep(time.Millisecond)
		waitLost(t, a2, 2*outTTL)
		go func() { done <- relock() }()
		time.Sleep(3 * outTTL)
		if err, ok := lockedBy(waiter); ok {
			t.Fatalf("k1's waiter returned %v before the release landed", err)
		}
		w.hang(false) // the release lands, late, before the check's reads
		if err := <-done; err != nil || a2.Token() != tok2 {
			t.Fatalf("a2's LockContext after the second outage = %v, token %d; want its hold back, token %d", err, a2.Token(), tok2)
		}
		awaitLocked(t, waiter, outTTL, "k1's waiter did not hold within a TTL of the store's return")
		b.Unlock()
		a2.Unlock()
	})
}
