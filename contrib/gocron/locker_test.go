package dsyncgocron_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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
type mutexLocker struct{ b *dsync.Client }

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
		a := newClient(t, store.Process())
		bp := store.Process()
		b := newClient(t, bp)
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

		bp.SetReachable(false)
		_, err = lb.Lock(ctx, "other")
		if !errors.Is(err, dsyncgocron.ErrUnavailable) || errors.Is(err, dsyncgocron.ErrRunning) || !errors.Is(err, memory.ErrUnreachable) {
			t.Errorf("Lock with the store unreachable: %v, want ErrUnavailable wrapping the store's error, not ErrRunning", err)
		}
		bp.SetReachable(true)

		bp.SetAnswering(false)
		start := time.Now()
		_, err = lb.Lock(ctx, "third")
		took := time.Since(start)
		bp.SetAnswering(true)
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
	b := newClient(t, memory.New())
	if _, err := dsyncgocron.NewLocker(nil, time.Second); err == nil {
		t.Error("nil client accepted")
	}
	for _, slot := range []time.Duration{0, -time.Second} {
		if _, err := dsyncgocron.NewLocker(b, slot); err == nil {
			t.Errorf("slot %v accepted", slot)
		}
	}
	if _, err := dsyncgocron.NewLocker(b, time.Second, dsync.WithProgressDeadline(-time.Second)); err == nil {
		t.Error("a bad lock option accepted")
	}
	if _, err := dsyncgocron.NewLocker(b, time.Second, dsync.WithReadLinger(time.Second)); err == nil {
		t.Error("an option a Mutex has no use for accepted")
	}
}

func TestSlot(t *testing.T) {
	l, err := dsyncgocron.NewLocker(newClient(t, memory.New()), time.Minute)
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

// heldRecords is a process's store whose done records are held up on the
// way while its renewals fail (from failRenewals on): a record's insert
// waits until land is closed (it then lands, and its reply comes in
// time) or its sender gives up.
type heldRecords struct {
	*memory.Store
	failRenewals atomic.Bool
	sent         chan struct{} // closed when a record's insert is sent
	sentOnce     sync.Once
	land         chan struct{}
}

func (s *heldRecords) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if s.failRenewals.Load() {
		return false, errors.New("renewal lost on the way")
	}
	return s.Store.RenewSession(ctx, id, gen, expires)
}

// Roles: the store's, without the record of up-time: a Client with an
// outage grace (the default) renews through it, past RenewSession, where
// this store fails renewals; without it the Client renews here.
func (s *heldRecords) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Uptime = nil
	return r
}

func (s *heldRecords) InsertSession(ctx context.Context, sess driver.Session) error {
	if s.failRenewals.Load() && sess.Gen > 0 { // a renewal's insert
		return errors.New("renewal lost on the way")
	}
	return s.Store.InsertSession(ctx, sess)
}

func (s *heldRecords) Insert(ctx context.Context, d driver.Doc) error {
	if d.Kind == driver.KindDone {
		s.sentOnce.Do(func() { close(s.sent) })
		select {
		case <-s.land:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return s.Store.Insert(ctx, d)
}

// beforeRecords is a process's store that calls before ahead of inserting
// a done record.
type beforeRecords struct {
	*memory.Store
	before func()
}

func (s *beforeRecords) Insert(ctx context.Context, d driver.Doc) error {
	if d.Kind == driver.KindDone {
		s.before()
	}
	return s.Store.Insert(ctx, d)
}

// Replica P claims a slot: its record's insert is held up on the way
// while its renewals fail, and its holds end at their deadline. Replica Q
// takes the job's lock once P's session expired, reads no record of the
// slot and claims it; P's insert then lands, just before Q's, and its
// reply reaches P in time. Both claims ran, so neither replica may run
// the job: each skips the tick with ErrUnavailable, saying why.
func TestLockerClaimConfirmedAfterTheHoldEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		ps := &heldRecords{Store: store, sent: make(chan struct{}), land: make(chan struct{})}
		pc := newClient(t, ps)
		pLocked := make(chan struct{})
		qs := &beforeRecords{Store: store, before: func() {
			close(ps.land) // P's record lands now, and P hears of it
			<-pLocked
		}}
		qc := newClient(t, qs)
		la, err := dsyncgocron.NewLocker(pc, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := dsyncgocron.NewLocker(qc, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))

		// P's lease is opened now, and its renewals fail from here on; P
		// claims the slot a third of the TTL later, so that its record's
		// insert is still on the way when its session has expired.
		warm, err := dsync.NewMutex(pc, "warm")
		if err != nil {
			t.Fatal(err)
		}
		warm.Lock()
		ps.failRenewals.Store(true)
		time.Sleep(dsync.DefaultTTL / 3)
		var pErr error
		go func() {
			defer close(pLocked)
			_, pErr = la.Lock(ctx, "report")
		}()
		<-ps.sent

		var qLock gocron.Lock
		for giveUp := time.Now().Add(2 * dsync.DefaultTTL); ; time.Sleep(100 * time.Millisecond) {
			qLock, err = lb.Lock(ctx, "report")
			if !errors.Is(err, dsyncgocron.ErrRunning) || time.Now().After(giveUp) {
				break
			}
		}
		select {
		case <-ps.land:
		default:
			t.Fatalf("Q's Lock = %v, %v without claiming the slot: the test's faults did not happen", qLock, err)
		}
		<-pLocked
		if pErr == nil && err == nil {
			t.Fatalf("both replicas were told to run the slot (P: %v, Q: %v)", pErr, err)
		}
		if !errors.Is(pErr, dsyncgocron.ErrUnavailable) || !errors.Is(pErr, dsync.ErrUnconfirmed) {
			t.Errorf("P's Lock = %v, want ErrUnavailable wrapping dsync.ErrUnconfirmed", pErr)
		}
		if !errors.Is(err, dsyncgocron.ErrUnavailable) || !errors.Is(err, dsync.ErrRanTwice) {
			t.Errorf("Q's Lock = %v, want ErrUnavailable wrapping dsync.ErrRanTwice", err)
		}
		if _, err := lb.Lock(ctx, "report"); !errors.Is(err, dsyncgocron.ErrSlotTaken) {
			t.Errorf("a later tick of the slot: %v, want ErrSlotTaken", err)
		}
	})
}

// TestLockNeverHeldIsNotLost: when the store stops answering while Lock
// tries the job's lock, Lock fails with ErrUnavailable saying the lock
// was not taken and why, once; not "lock lost before unlock" (twice, as
// dsync words a lost hold), and not matching dsync.ErrLost: no lock was
// held. Without an outage grace the lease ends meanwhile, and the error
// says so; with one (the default) the lease is suspended, not ended, and
// the error is the Lock's own time running out.
func TestLockNeverHeldIsNotLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []dsync.ClientOption
		want string // in the error, once
	}{
		{"no outage grace", []dsync.ClientOption{dsync.ClientWithOutageGrace(0)}, "lease"},
		{"default outage grace", nil, "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lockNeverHeld(t, tc.opts, tc.want)
		})
	}
}

// lockNeverHeld is TestLockNeverHeldIsNotLost with a Client of opts, whose
// error must say want once.
func lockNeverHeld(t *testing.T, opts []dsync.ClientOption, want string) {
	synctest.Test(t, func(t *testing.T) {
		p := memory.New().Process()
		var logged bytes.Buffer // what the Client logs, at Warn and above
		c, err := dsync.NewClient(p, append([]dsync.ClientOption{dsync.ClientWithLogger(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))), dsync.ClientWithTTL(time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := dsyncgocron.NewLocker(c, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		k, err := l.Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		// The lease's deadline passes while the next Lock waits for the
		// store.
		p.SetAnswering(false)
		time.Sleep(300 * time.Millisecond)
		_, err = l.Lock(ctx, "job")
		p.SetAnswering(true)
		if !errors.Is(err, dsyncgocron.ErrUnavailable) || errors.Is(err, dsync.ErrLost) ||
			strings.Contains(err.Error(), "lost before unlock") || strings.Count(err.Error(), want) != 1 {
			t.Errorf("Lock while the store did not answer: %v; want ErrUnavailable saying %q once, not ErrLost", err, want)
		}
		c.Close()
		for line := range strings.Lines(logged.String()) {
			if strings.Contains(line, "lost before unlock") || strings.Count(line, "no renewal confirmed") > 1 {
				t.Errorf("the Client logged a loss of a lock never held, or said its cause twice: %s", line)
			}
		}
	})
}
