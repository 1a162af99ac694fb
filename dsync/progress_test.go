package dsync_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/event"
)

// Progress deadlines (WithProgressDeadline) on a Mutex: what a stall
// does, when, and what reporting costs. RWMutex and Semaphore are in
// progress_family_test.go.

const (
	progressTTL = 3 * time.Second
	// progressHandoff bounds a handoff in the bubble: the waiter hears
	// the release at once, or polls every 100 ms (NewMemClient).
	progressHandoff = 200 * time.Millisecond
)

// callCount counts the calls a process makes to its store, by method.
type callCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCount) hook(_ context.Context, call memory.Call, _ func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[renewalAsOne(call.Op)]++
	return nil
}

func (c *callCount) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := make(map[string]int, len(c.n))
	for k, v := range c.n {
		s[k] = v
	}
	return s
}

// since is what after counts beyond before, by method (zeros left out).
func since(before, after map[string]int) map[string]int {
	d := make(map[string]int)
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

func newProgressMutex(t *testing.T, c *dsync.Client, key string, opts ...dsync.Option) *dsync.Mutex {
	t.Helper()
	m, err := dsync.NewMutex(c, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// progressBound bounds every wait of these tests, so that a hold that is
// never stalled, or never released, fails the test instead of hanging it.
const progressBound = 10 * progressTTL

// await returns what ch sends, or fails t if it sends nothing within
// progressBound.
func await[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(progressBound):
		t.Fatalf("%s: nothing within %v", what, progressBound)
		panic("unreachable")
	}
}

// wantStalled fails t unless err says a stall ended the hold.
func wantStalled(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, dsync.ErrLost) || !errors.Is(err, dsync.ErrStalled) {
		t.Errorf("%s: %v; want an error wrapping ErrLost and ErrStalled", what, err)
	}
}

// A holder whose work stops reporting progress is replaced: at its last
// report plus the deadline its hold is lost (Lost closes; Err, the
// Observer, the error handler and the log at Warn say it stalled), and a margin (TTL/20)
// later its claim is released, so the waiter of another process holds
// then, within a handoff; not before the margin, which is the stalled
// work's head start to stop. The holder's session keeps renewing (it
// holds another key), so nothing but the stall's release lets the waiter
// in before the TTL. The Unlock that follows returns the loss and sends
// nothing.
func TestStalledMutexReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 2 * time.Second
		margin := driver.Margin(progressTTL)
		store := memory.New()
		var logged logBuffer
		var calls callCount
		losses := make(chan error, 4)
		a := dsync.NewMemClientOn(store.Intercept(calls.hook), dsync.ClientWithTTL(progressTTL),
			dsync.ClientWithLogger(slog.New(slog.NewTextHandler(&logged, nil))),
			dsync.ClientWithObserver(event.Observer{Lost: func(_ event.Held, err error) { losses <- err }}))
		defer a.Close()
		b := dsync.NewMemClientOn(store, dsync.ClientWithTTL(progressTTL))
		defer b.Close()

		other := newProgressMutex(t, a.Client, "other")
		other.Lock()
		defer other.Unlock()
		handled := make(chan error, 4)
		m := newProgressMutex(t, a.Client, "k", dsync.WithProgressDeadline(d),
			dsync.WithErrorHandler(func(err error) { handled <- err }))
		if err := m.Err(); err != nil {
			t.Errorf("Err before any hold: %v", err)
		}
		m.Lock()
		next := newProgressMutex(t, b.Client, "k")
		acquired := make(chan time.Time, 1)
		go func() {
			next.Lock()
			acquired <- time.Now()
		}()
		for range 6 {
			time.Sleep(d / 2)
			m.Progress()
		}
		last := time.Now()
		if err := m.Err(); err != nil {
			t.Errorf("Err while reports come within the deadline: %v", err)
		}
		await(t, "Lost", m.Lost())
		lostAt := time.Now()
		got := await(t, "the next waiter's hold", acquired)

		if lag := lostAt.Sub(last); lag < d || lag > d+time.Millisecond {
			t.Errorf("Lost closed %v after the last report; want the deadline, %v", lag, d)
		}
		if wait := got.Sub(lostAt); wait < margin || wait > margin+progressHandoff {
			t.Errorf("the next waiter held %v after Lost closed; want the margin %v, plus a handoff of at most %v", wait, margin, progressHandoff)
		}
		wantStalled(t, "Err", m.Err())
		wantStalled(t, "Observer.Lost", await(t, "Observer.Lost", losses))
		wantStalled(t, "the error handler", await(t, "the error handler", handled))
		synctest.Wait()
		var warned bool
		for line := range strings.Lines(logged.String()) {
			if strings.Contains(line, "hold lost") && strings.Contains(line, "level=WARN") && strings.Contains(line, dsync.ErrStalled.Error()) {
				warned = true
			}
		}
		if !warned {
			t.Errorf("no loss logged at Warn saying it stalled:\n%s", logged.String())
		}

		before := calls.snapshot()
		wantStalled(t, "UnlockContext", m.UnlockContext(context.Background()))
		synctest.Wait()
		if sent := since(before, calls.snapshot()); len(sent) > 0 {
			t.Errorf("the Unlock after the stall sent %v; want nothing", sent)
		}
		wantStalled(t, "Err after the Unlock", m.Err())
		next.Unlock()
		m.Lock()
		if err := m.Err(); err != nil {
			t.Errorf("Err of the next hold: %v", err)
		}
		m.Unlock()
		if err := m.Err(); err != nil {
			t.Errorf("Err after an Unlock of a valid hold: %v", err)
		}
	})
}

// A holder that reports progress within its deadline is never stalled:
// reports at random gaps of up to half the deadline, for a hundred
// deadlines, with a waiter of another process queued behind it all along.
// The waiter holds only once the holder unlocks.
func TestProgressWithinDeadlineNeverStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		store := memory.New()
		lost := make(chan error, 1)
		a := dsync.NewMemClientOn(store, dsync.ClientWithTTL(progressTTL),
			dsync.ClientWithObserver(event.Observer{Lost: func(_ event.Held, err error) { lost <- err }}))
		defer a.Close()
		b := dsync.NewMemClientOn(store, dsync.ClientWithTTL(progressTTL))
		defer b.Close()
		m := newProgressMutex(t, a.Client, "k", dsync.WithProgressDeadline(d))
		m.Lock()
		next := newProgressMutex(t, b.Client, "k")
		acquired := make(chan struct{})
		go func() {
			next.Lock()
			close(acquired)
		}()
		rng := rand.New(rand.NewPCG(1, 2))
		for start := time.Now(); time.Since(start) < 100*d; {
			time.Sleep(time.Duration(rng.Int64N(int64(d/2) + 1)))
			m.Progress()
		}
		select {
		case <-m.Lost():
			t.Fatalf("stalled while reporting within the deadline: %v", m.Err())
		case <-acquired:
			t.Fatal("the waiter held while the holder reported progress")
		default:
		}
		if err := m.UnlockContext(context.Background()); err != nil {
			t.Errorf("UnlockContext: %v", err)
		}
		await(t, "the next waiter's hold", acquired)
		next.Unlock()
		synctest.Wait()
		select {
		case err := <-lost:
			t.Errorf("Observer.Lost: %v", err)
		default:
		}
	})
}

// Reporting progress sends nothing to the store: over 10⁴ reports, the
// process of a holder with a deadline sends what a holder's sends with
// no deadline and no reports (its lease's renewals and revocation
// reads), call for call.
func TestProgressSendsNothing(t *testing.T) {
	window := func(report bool) map[string]int {
		var sent map[string]int
		synctest.Test(t, func(t *testing.T) {
			var calls callCount
			c := dsync.NewMemClientOn(memory.New().Intercept(calls.hook), dsync.ClientWithTTL(progressTTL))
			defer c.Close()
			var opts []dsync.Option
			if report {
				opts = append(opts, dsync.WithProgressDeadline(time.Second))
			}
			m := newProgressMutex(t, c.Client, "k", opts...)
			m.Lock()
			defer m.Unlock()
			synctest.Wait()
			before := calls.snapshot()
			for range 10_000 {
				time.Sleep(time.Millisecond)
				if report {
					m.Progress()
				}
			}
			synctest.Wait()
			sent = since(before, calls.snapshot())
			if report {
				select {
				case <-m.Lost():
					t.Errorf("lost while reporting: %v", m.Err())
				default:
				}
			}
		})
		return sent
	}
	with, without := window(true), window(false)
	t.Logf("sent over 10⁴ reports: %v; without reports: %v", with, without)
	if len(with) != len(without) {
		t.Fatalf("sent %v over 10⁴ reports; without reports %v", with, without)
	}
	for op, n := range without {
		if with[op] != n {
			t.Errorf("sent %v over 10⁴ reports; without reports %v", with, without)
			break
		}
	}
	if with["RenewSession"] == 0 {
		t.Errorf("no renewal counted in the window (%v): the count is broken", with)
	}
}

// Without WithProgressDeadline, a hold has no deadline of its kind: held
// for many TTLs with no report, it stays valid, and Progress does
// nothing.
func TestNoProgressDeadlineByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := dsync.NewMemClient(dsync.ClientWithTTL(progressTTL))
		defer c.Close()
		m := newProgressMutex(t, c.Client, "k")
		m.Progress()
		m.Lock()
		time.Sleep(20 * progressTTL)
		select {
		case <-m.Lost():
			t.Fatalf("lost with no deadline set: %v", m.Err())
		default:
		}
		if err := m.UnlockContext(context.Background()); err != nil {
			t.Errorf("UnlockContext: %v", err)
		}
	})
}

// Err says why a hold that its lease lost was lost: ErrLost, and not
// ErrStalled.
func TestErrOfLeaseLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := dsync.NewMemClient(dsync.ClientWithTTL(progressTTL))
		defer c.Close()
		m := newProgressMutex(t, c.Client, "k", dsync.WithProgressDeadline(time.Minute))
		m.Lock()
		c.SetReachable(false)
		await(t, "Lost", m.Lost())
		err := m.Err()
		if !errors.Is(err, dsync.ErrLost) || errors.Is(err, dsync.ErrStalled) {
			t.Errorf("Err after the lease was lost: %v; want ErrLost, not ErrStalled", err)
		}
		if uerr := m.UnlockContext(context.Background()); !errors.Is(uerr, dsync.ErrLost) {
			t.Errorf("UnlockContext: %v; want ErrLost", uerr)
		}
		if m.Err() != err {
			t.Errorf("Err after the Unlock: %v; want the loss, %v", m.Err(), err)
		}
	})
}

// WithProgressDeadline refuses a negative deadline and one outside
// [MinTTL, 30 days]; 0 is off. Each primitive that holds takes it.
func TestProgressDeadlineOption(t *testing.T) {
	c := dsync.NewMemClient()
	defer c.Close()
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{
		{-time.Second, false},
		{0, true},
		{time.Nanosecond, false},
		{dsync.MinTTL - 1, false},
		{dsync.MinTTL, true},
		{time.Hour, true},
		{30 * 24 * time.Hour, true},
		{30*24*time.Hour + 1, false},
	} {
		opt := dsync.WithProgressDeadline(tc.d)
		_, errM := dsync.NewMutex(c.Client, "k", opt)
		_, errRW := dsync.NewRWMutex(c.Client, "k", opt)
		_, errS := dsync.NewSemaphore(c.Client, "k", 2, opt)
		for _, err := range []error{errM, errRW, errS} {
			if (err == nil) != tc.ok {
				t.Errorf("WithProgressDeadline(%v): %v; want ok %v", tc.d, err, tc.ok)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "dsync: WithProgressDeadline(") {
				t.Errorf("WithProgressDeadline(%v): %q does not name the option", tc.d, err)
			}
		}
	}
}
