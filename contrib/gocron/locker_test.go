package dsyncgocron_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-co-op/gocron/v2"

	dsyncgocron "github.com/go-dsync/dsync/contrib/gocron"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// newClient is a process's Client on the shared store.
func newClient(t *testing.T, s driver.Store) *dsync.Client {
	t.Helper()
	c, err := dsync.NewClient(s, dsync.ClientWithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// runs records the runs of a job: which scheduler ran it, and when.
type runs struct {
	mu  sync.Mutex
	by  []int
	at  []time.Time
	all int
}

func (r *runs) add(who int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.by = append(r.by, who)
	r.at = append(r.at, time.Now())
	r.all++
}

func (r *runs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all
}

// skews are when each scheduler's ticks come after the scheduled time:
// replicas whose clocks, start-up or load differ by tens of milliseconds.
var skews = []time.Duration{0, 40 * time.Millisecond, 90 * time.Millisecond}

// schedule starts, on each of the lockers' schedulers, a 5 ms job every
// second from start (plus the scheduler's skew), and returns the runs and
// a function that shuts the schedulers down.
func schedule(t *testing.T, lockers []gocron.Locker, start time.Time) (*runs, func()) {
	t.Helper()
	r := &runs{}
	var scheds []gocron.Scheduler
	for i, l := range lockers {
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.NewJob(gocron.DurationJob(time.Second),
			gocron.NewTask(func() {
				r.add(i)
				time.Sleep(5 * time.Millisecond)
			}),
			gocron.WithName("report"),
			gocron.WithStartAt(gocron.WithStartDateTime(start.Add(skews[i]))))
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		scheds = append(scheds, s)
	}
	return r, func() {
		for _, s := range scheds {
			if err := s.Shutdown(); err != nil {
				t.Error(err)
			}
		}
	}
}

// Three schedulers, a short job every second for 10 s, ticks tens of
// milliseconds apart: exactly 10 runs, one per second.
func TestLockerRunsEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		var lockers []gocron.Locker
		for range skews {
			l, err := dsyncgocron.NewLocker(newClient(t, store), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			lockers = append(lockers, l)
		}
		start := time.Now().Truncate(time.Second).Add(2 * time.Second)
		r, stop := schedule(t, lockers, start)
		time.Sleep(time.Until(start.Add(9500 * time.Millisecond)))
		stop()
		if r.all != 10 {
			t.Fatalf("%d runs in 10 s (by scheduler %v), want 10", r.all, r.by)
		}
		for i, at := range r.at {
			if want := start.Add(time.Duration(i) * time.Second); at.Sub(want) < 0 || at.Sub(want) > 500*time.Millisecond {
				t.Errorf("run %d at %v, want within the slot of %v", i, at, want)
			}
		}
	})
}

// mutexLocker is a Locker with only a lock held while the job runs: what
// gocron's issue 841 is about.
type mutexLocker struct{ b dsync.Backend }

func (l mutexLocker) Lock(ctx context.Context, job string) (gocron.Lock, error) {
	m, err := dsync.NewMutex(l.b, job)
	if err != nil {
		return nil, err
	}
	if !m.TryLock() {
		return nil, errors.New("held")
	}
	return mutexLock{m}, nil
}

type mutexLock struct{ m *dsync.Mutex }

func (l mutexLock) Unlock(ctx context.Context) error { return l.m.UnlockContext(ctx) }

// The control: with only a lock, the short job runs once per replica at
// each tick. The test above would see it.
func TestPlainLockRunsShortJobOnEveryReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		var lockers []gocron.Locker
		for range skews {
			lockers = append(lockers, mutexLocker{newClient(t, store)})
		}
		start := time.Now().Truncate(time.Second).Add(2 * time.Second)
		r, stop := schedule(t, lockers, start)
		time.Sleep(time.Until(start.Add(9500 * time.Millisecond)))
		stop()
		t.Logf("%d runs in 10 s with a plain lock, by scheduler %v", r.all, r.by)
		if r.all <= 10 {
			t.Fatalf("%d runs in 10 s with a plain lock: the replicas' ticks did not find the lock free, so the test of the Locker proves nothing", r.all)
		}
	})
}

// A tick while another run of the job holds its lock is skipped
// (ErrRunning), and so is a later tick of a slot that ran (ErrSlotTaken);
// the next slot runs.
func TestLockerSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, err := dsyncgocron.NewLocker(newClient(t, store), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		b, err := dsyncgocron.NewLocker(newClient(t, store), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		held, err := a.Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Lock(ctx, "job"); !errors.Is(err, dsyncgocron.ErrRunning) {
			t.Fatalf("Lock while another run holds: %v, want ErrRunning", err)
		}
		if _, err := a.Lock(ctx, "job"); !errors.Is(err, dsyncgocron.ErrRunning) {
			t.Fatalf("Lock of the same Locker while it holds: %v, want ErrRunning", err)
		}
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Second) // later in the same slot
		if _, err := b.Lock(ctx, "job"); !errors.Is(err, dsyncgocron.ErrSlotTaken) {
			t.Fatalf("Lock of a slot that ran: %v, want ErrSlotTaken", err)
		}
		// Another job's slot is its own.
		other, err := b.Lock(ctx, "other")
		if err != nil {
			t.Fatalf("Lock of another job: %v", err)
		}
		_ = other.Unlock(ctx)
		time.Sleep(20 * time.Second) // nearer the next slot: it counts for that one
		next, err := b.Lock(ctx, "job")
		if err != nil {
			t.Fatalf("Lock of the next slot: %v", err)
		}
		if err := next.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// Lock tells a run elsewhere (ErrRunning) from an outage (ErrUnavailable):
// a store that cannot be reached, or does not answer, is not a job that
// runs, and an alert that treats ErrRunning as normal still sees it. A
// store that does not answer costs a tick at most the try timeout.
func TestLockerTellsAnOutageFromARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := dsync.NewMemoryBackendOn(store)
		defer a.Close()
		b := dsync.NewMemoryBackendOn(store)
		defer b.Close()
		la, err := dsyncgocron.NewLocker(a, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := dsyncgocron.NewLocker(b, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		held, err := la.Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		_, err = lb.Lock(ctx, "job")
		if !errors.Is(err, dsyncgocron.ErrRunning) || errors.Is(err, dsyncgocron.ErrUnavailable) || !errors.Is(err, dsync.ErrHeld) {
			t.Errorf("Lock while another replica runs the job: %v, want ErrRunning (and the HeldError)", err)
		}
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}

		b.SetReachable(false)
		_, err = lb.Lock(ctx, "other")
		if !errors.Is(err, dsyncgocron.ErrUnavailable) || errors.Is(err, dsyncgocron.ErrRunning) || !errors.Is(err, dsync.ErrUnreachable) {
			t.Errorf("Lock with the store unreachable: %v, want ErrUnavailable wrapping the store's error, not ErrRunning", err)
		}
		b.SetReachable(true)

		b.SetAnswering(false)
		start := time.Now()
		_, err = lb.Lock(ctx, "third")
		took := time.Since(start)
		b.SetAnswering(true)
		if !errors.Is(err, dsyncgocron.ErrUnavailable) || errors.Is(err, dsyncgocron.ErrRunning) {
			t.Errorf("Lock with the store not answering: %v, want ErrUnavailable, not ErrRunning", err)
		}
		if took > dsync.DefaultTryTimeout {
			t.Errorf("Lock with the store not answering returned after %v, want within the try timeout %v", took, dsync.DefaultTryTimeout)
		}

		cause := errors.New("scheduler shutting down")
		cctx, cancel := context.WithCancelCause(ctx)
		cancel(cause)
		if _, err := lb.Lock(cctx, "job"); err != cause {
			t.Errorf("Lock with an ended context: %v, want its cause unchanged", err)
		}
	})
}

func TestNewLockerRejectsBadInput(t *testing.T) {
	b := dsync.NewMemoryBackend()
	defer b.Close()
	if _, err := dsyncgocron.NewLocker(nil, time.Second); err == nil {
		t.Error("nil backend accepted")
	}
	for _, slot := range []time.Duration{0, -time.Second} {
		if _, err := dsyncgocron.NewLocker(b, slot); err == nil {
			t.Errorf("slot %v accepted", slot)
		}
	}
	if _, err := dsyncgocron.NewLocker(b, time.Second, dsync.WithTTL(-time.Second)); err == nil {
		t.Error("a bad lock option accepted")
	}
}

func TestSlot(t *testing.T) {
	b := dsync.NewMemoryBackend()
	defer b.Close()
	l, err := dsyncgocron.NewLocker(b, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tick := range []time.Duration{0, 29 * time.Second, -29 * time.Second, -time.Millisecond} {
		if got := l.Slot(at.Add(tick)); !got.Equal(at) {
			t.Errorf("Slot(%v) = %v, want %v", at.Add(tick), got, at)
		}
	}
	if got := l.Slot(at.Add(31 * time.Second)); !got.Equal(at.Add(time.Minute)) {
		t.Errorf("Slot(10:00:31) = %v, want 10:01", got)
	}
	if got, want := l.SlotKey("report", at.Add(time.Second)), "gocron/report/2026-11-23T10:00:00Z"; got != want {
		t.Errorf("SlotKey = %q, want %q", got, want)
	}
}
