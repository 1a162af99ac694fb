package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/suspend"
)

// TestLostClosesAtResumePastDeadline: a holder whose machine sleeps past
// its deadline must not go on believing it holds the lock for the rest of
// its TTL in awake time. Its deadline is 14.25 s after the acquire; the
// machine is suspended for 20 s two seconds in. Go's timers, which count
// awake time only, would close Lost 12.25 s after the resume; it must
// close at the resume.
func TestLostClosesAtResumePastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		mem := dsync.NewMemClient(dsync.ClientWithTTL(15*time.Second), dsync.WithClock(dsync.SuspendClock(counter)))
		defer mem.Close() // a suspended session (the default grace) is checked until then
		m := newMutex(t, mem.Client, "k")
		m.Lock()
		lost := m.Lost() // taken before the suspend: only the deadline timer can close it

		time.Sleep(2 * time.Second)
		suspendFor(20 * time.Second)
		resumed := time.Now()

		select {
		case <-lost:
			if d := time.Since(resumed); d != 0 {
				t.Errorf("Lost closed %v after the resume, want at the resume", d)
			}
		case <-time.After(time.Second):
			t.Error("Lost still open a second after resuming 7.75 s past the deadline")
		}
		if err := m.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Fatalf("UnlockContext after the suspend = %v, want ErrLost", err)
		}
	})
}

// A Lost or Unlock call right after the resume sees the deadline passed
// without waiting for any timer.
func TestCallsAfterResumePastDeadlineSeeTheLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		mem := dsync.NewMemClient(dsync.ClientWithTTL(15*time.Second), dsync.WithClock(dsync.SuspendClock(counter)))
		defer mem.Close() // a suspended session (the default grace) is checked until then
		m := newMutex(t, mem.Client, "k")
		m.Lock()
		time.Sleep(2 * time.Second)
		suspendFor(20 * time.Second)
		select {
		case <-m.Lost():
		default:
			t.Fatal("Lost open right after resuming past the deadline")
		}
		if err := m.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Fatalf("UnlockContext right after the suspend = %v, want ErrLost", err)
		}
	})
}

// A suspend shorter than the time left keeps the hold: the renewal that
// the suspend made overdue runs at the resume, in time.
func TestShortSuspendKeepsTheHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		mem := dsync.NewMemClient(dsync.ClientWithTTL(15*time.Second), dsync.WithClock(dsync.SuspendClock(counter)))
		defer mem.Close() // a suspended session (the default grace) is checked until then
		m := newMutex(t, mem.Client, "k")
		m.Lock()
		lost := m.Lost()
		for range 5 {
			time.Sleep(2 * time.Second)
			suspendFor(10 * time.Second) // overdue for renewal, not yet past the deadline
		}
		time.Sleep(time.Minute)
		select {
		case <-lost:
			t.Fatal("hold lost over suspends shorter than the time left")
		default:
		}
		if err := m.UnlockContext(context.Background()); err != nil {
			t.Fatalf("UnlockContext = %v", err)
		}
	})
}

// TestValidUntilIsOnTimeNowsScale: ValidUntil maps the time left on the
// Mutex's clock onto time.Now, whatever the clock counted before the hold
// (here a 1 h suspend) and during it.
func TestValidUntilIsOnTimeNowsScale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		mem := dsync.NewMemClient(dsync.ClientWithTTL(15*time.Second), dsync.ClientWithRenewInterval(14*time.Second),
			dsync.WithClock(dsync.SuspendClock(counter)))
		defer mem.Close() // a suspended session (the default grace) is checked until then
		m := newMutex(t, mem.Client, "k")
		suspendFor(time.Hour)
		m.Lock()
		if left := time.Until(m.ValidUntil()); left != 14250*time.Millisecond {
			t.Errorf("right after Lock, ValidUntil is %v from now; want 14.25s", left)
		}
		suspendFor(5 * time.Second)
		if left := time.Until(m.ValidUntil()); left != 9250*time.Millisecond {
			t.Errorf("after a 5 s suspend, ValidUntil is %v from now; want 9.25s", left)
		}
		m.Unlock()
	})
}

// partitioned passes calls to a backend and counts renewals; while down is
// set, a renewal hangs until its context ends, as one to an unreachable
// server does.
type partitioned struct {
	*memory.Store
	down     atomic.Bool
	renewals atomic.Int64
}

func (p *partitioned) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	p.renewals.Add(1)
	if p.down.Load() {
		<-ctx.Done()
		return false, context.Cause(ctx)
	}
	return p.Store.RenewSession(ctx, id, gen, expires)
}

// Roles: the store's, without the record of up-time (withoutUptime).
func (p *partitioned) Roles() driver.Roles { return withoutUptime(p.Store.Roles()) }

// InsertSession: a generation above 0 is a renewal's.
func (p *partitioned) InsertSession(ctx context.Context, s driver.Session) error {
	if s.Gen > 0 && p.down.Load() {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	return p.Store.InsertSession(ctx, s)
}

// suspendUntil suspends the machine so that it resumes lead before m's
// deadline, and returns the deadline on counter's clock.
func suspendUntil(t *testing.T, m *dsync.Mutex, counter *suspend.Counter, suspendFor func(time.Duration), lead time.Duration) time.Time {
	t.Helper()
	deadline := counter.Now().Add(time.Until(m.ValidUntil()))
	suspendFor(deadline.Sub(counter.Now()) - lead)
	if left := deadline.Sub(counter.Now()); left != lead {
		t.Errorf("resumed %v before the deadline, want %v", left, lead)
	}
	return deadline
}

// TestLostClosesAtDeadlineAfterResumeShortlyBefore: with the server
// unreachable, a machine resumes 100–150 ms before its hold's deadline. The
// Lost channel taken before the suspend must close at the deadline, not
// when something next looks at the clock: past the deadline the backend may
// let another process hold.
func TestLostClosesAtDeadlineAfterResumeShortlyBefore(t *testing.T) {
	for _, ttl := range []time.Duration{15 * time.Second, 2 * time.Second} {
		for _, lead := range []time.Duration{100 * time.Millisecond, 150 * time.Millisecond} {
			t.Run(fmt.Sprintf("TTL %v resume %v before", ttl, lead), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					counter, suspendFor := suspend.Fake()
					backend := &partitioned{Store: memory.New()}
					m := newMutex(t, newClient(t, backend, dsync.ClientWithTTL(ttl), dsync.WithClock(dsync.SuspendClock(counter))), "k")
					m.Lock()
					lost := m.Lost()
					backend.down.Store(true)

					time.Sleep(ttl / 7) // awake, before the first renewal is due
					deadline := suspendUntil(t, m, counter, suspendFor, lead)

					select {
					case <-lost:
						if late := counter.Now().Sub(deadline); late < 0 || late > 2*time.Millisecond {
							t.Errorf("Lost closed %v after the deadline, want within 2ms", late)
						}
					case <-time.After(ttl):
						t.Errorf("Lost still open %v after the deadline", ttl-lead)
					}
					if err := m.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
						t.Fatalf("UnlockContext after the deadline = %v, want ErrLost", err)
					}
				})
			})
		}
	}
}

// TestResumeShortlyBeforeDeadlineRenewsAtOnce: a suspend that carried the
// renewal past its time but ended before the deadline must not cost the
// hold when the server is reachable: the overdue renewal goes out at the
// resume and is confirmed in time.
func TestResumeShortlyBeforeDeadlineRenewsAtOnce(t *testing.T) {
	for _, ttl := range []time.Duration{15 * time.Second, 2 * time.Second} {
		t.Run(fmt.Sprintf("TTL %v", ttl), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				counter, suspendFor := suspend.Fake()
				backend := &partitioned{Store: memory.New()}
				m := newMutex(t, newClient(t, backend, dsync.ClientWithTTL(ttl), dsync.WithClock(dsync.SuspendClock(counter))), "k")
				m.Lock()
				lost := m.Lost()

				time.Sleep(ttl / 7) // awake, before the first renewal is due
				suspendUntil(t, m, counter, suspendFor, 100*time.Millisecond)
				synctest.Wait()
				if n := backend.renewals.Load(); n != 1 {
					t.Errorf("%d renewals sent at the resume, want the overdue one", n)
					// Stop before the deadline: a renewal sent after it
					// is not counted, and the keeper sends the next at
					// once, again and again, until the deadline timer
					// runs; fake time stands still meanwhile.
					m.Unlock()
					return
				}
				if left, want := time.Until(m.ValidUntil()), ttl-ttl/20; left != want {
					t.Errorf("after the resume, the hold is valid for %v, want %v: the renewal sent then confirmed", left, want)
				}
				time.Sleep(3 * ttl)
				select {
				case <-lost:
					t.Error("hold lost after a resume before its deadline, with the server reachable")
				default:
				}
				if err := m.UnlockContext(context.Background()); err != nil {
					t.Fatalf("UnlockContext = %v", err)
				}
			})
		})
	}
}
