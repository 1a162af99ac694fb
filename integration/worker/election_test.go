package worker

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
)

// gateRegister is a register whose writes wait for proceed to close; the
// first one closes writing.
type gateRegister struct {
	writing chan struct{}
	proceed chan struct{}
	writes  atomic.Int32
}

func newGateRegister() *gateRegister {
	return &gateRegister{writing: make(chan struct{}), proceed: make(chan struct{})}
}

func (g *gateRegister) Read(context.Context, uint64) (int64, error) { return 0, nil }

func (g *gateRegister) Write(ctx context.Context, token uint64, v int64, wid string) error {
	if g.writes.Add(1) == 1 {
		close(g.writing)
	}
	<-g.proceed
	return nil
}

// electionWorld is a worker, w1, campaigning (elect) against a rival
// candidate in another process of the same in-memory store.
type electionWorld struct {
	w       *worker
	path    string // w1's history
	reg     *gateRegister
	store   *memory.Store
	members *leadertest.MemoryMembers
}

const electionTTL = time.Second

func newElectionWorld(t *testing.T) *electionWorld {
	r, path := testRecorder(t, electionTTL)
	w := r.w
	w.rec = r
	w.logger = slog.New(slog.DiscardHandler)
	// Terms last until the worker is told to stop.
	w.cfg = Config{Name: "w1", Mode: ModeElection, Key: "e", TTL: electionTTL, HoldFor: time.Hour}
	reg := newGateRegister()
	w.reg = reg
	return &electionWorld{w: w, path: path, reg: reg, store: memory.New(), members: leadertest.NewMemoryMembers()}
}

// election returns a candidate in a process of its own; for w1 (recorded),
// its Client's store calls go through w1's recorder.
func (ew *electionWorld) election(t *testing.T, recorded bool, opts ...leader.Option) *leader.Election {
	t.Helper()
	var s driver.Store = ew.store.Process()
	if recorded {
		s = ew.w.rec.over(s, nil)
	}
	c, err := dsync.NewClient(s, dsync.ClientWithTTL(electionTTL), dsync.ClientWithHints("", ""),
		dsync.ClientWithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	e, err := leader.NewElection(c, ew.w.cfg.Key, append([]leader.Option{
		leader.WithMembers(ew.members), leader.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// rival campaigns with e, and returns a channel that gives the
// CLOCK_MONOTONIC reading of the moment e was elected.
func rival(e *leader.Election) <-chan int64 {
	won := make(chan int64, 1)
	go func() {
		if _, err := e.Campaign(context.Background()); err == nil {
			won <- history.Now()
		}
		close(won)
	}()
	return won
}

// checkEndedBefore checks, as the checker does, that every term w1
// recorded was recorded ended before the rival, whose token is larger,
// was elected at elected.
func (ew *electionWorld) checkEndedBefore(t *testing.T, elected int64) {
	t.Helper()
	began := make(map[uint64]int64)
	for _, ev := range readEvents(t, ew.path) {
		switch ev.Ev {
		case history.EvAcquire:
			began[ev.Token] = ev.T
		case history.EvEnd:
			if ev.T > elected {
				t.Errorf("w1's term %d, begun at %d, recorded ended %v after the next leader was elected", ev.Token, began[ev.Token], time.Duration(ev.T-elected))
			}
			delete(began, ev.Token)
		}
	}
	for token, at := range began {
		t.Errorf("w1's term %d, begun at %d, not recorded ended", token, at)
	}
}

// A worker told to stop while it leads finishes its term before the next
// leader is elected: it records the term's end, then resigns. Campaigned
// under the worker's context, the term's lease was released the moment
// that context ended, while the worker was still in its register write,
// and the term was recorded ended after the next leader had begun (the
// checker then found two leaders at once).
func TestElectionWorkerStoppedInATermEndsItFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ew := newElectionWorld(t)
		var elected atomic.Pointer[leader.Info]
		e1 := ew.election(t, true, leader.OnElected(func(info leader.Info) { elected.Store(&info) }))
		e2 := ew.election(t, false)

		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ew.w.elect(ctx, e1, &elected) }()
		<-ew.reg.writing // w1 leads, and is in its register write
		won := rival(e2)
		synctest.Wait()
		stop() // the worker is told to stop, as the suite does at its end
		time.Sleep(3 * electionTTL)
		var at int64
		ok, early := false, false
		select {
		case at, ok = <-won:
			early = true
			t.Errorf("the rival was elected while w1, told to stop, was still in its term's write")
		default:
		}
		close(ew.reg.proceed)
		if err := <-done; err != nil {
			t.Errorf("elect: %v", err)
		}
		if !early {
			at, ok = <-won
		}
		if !ok {
			t.Fatal("the rival was not elected")
		}
		ew.checkEndedBefore(t, at)
	})
}

// A worker told to stop as it is elected does not rely on that term: the
// lease of a term begun as the worker's context ended is released at
// once, so the worker records no such term (a term recorded then would
// overlap the next leader's).
func TestElectionWorkerStoppedAsElectedRecordsNoTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ew := newElectionWorld(t)
		ctx, stop := context.WithCancel(context.Background())
		var elected atomic.Pointer[leader.Info]
		e1 := ew.election(t, true, leader.OnElected(func(info leader.Info) {
			elected.Store(&info)
			stop() // told to stop before Campaign returns
		}))
		e2 := ew.election(t, false)

		done := make(chan error, 1)
		go func() { done <- ew.w.elect(ctx, e1, &elected) }()
		synctest.Wait()
		won := rival(e2)
		time.Sleep(3 * electionTTL)
		close(ew.reg.proceed)
		if err := <-done; err != nil {
			t.Errorf("elect: %v", err)
		}
		at, ok := <-won
		if !ok {
			t.Fatal("the rival was not elected")
		}
		ew.checkEndedBefore(t, at)
	})
}
