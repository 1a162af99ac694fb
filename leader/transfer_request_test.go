package leader_test

import (
	"context"
	"errors"
	"github.com/go-dsync/dsync/leader/operator"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/statuspage"
)

// TestTransferRequest: a transfer request for the leader's term is acted
// on at its heartbeat (the candidate asked for leads next, the old term
// ends with ErrTransferred); a request naming a term that has ended,
// landing late, changes nothing.
func TestTransferRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, stop := newRequestPair(t)
		defer stop()
		w, a, b, l, ctx, info := p.w, p.a, p.b, p.l, p.ctx, p.info
		time.Sleep(time.Second) // both candidates' status written
		if _, err := operator.RequestTransfer(ctx, nil, w.members, "cron", info.Token, b.ID(), "test", ""); err != nil {
			t.Fatal(err)
		}
		waitTerms := func(n int) []loggedTerm {
			t.Helper()
			for start := time.Now(); time.Since(start) < 4*ttl; time.Sleep(10 * time.Millisecond) {
				if terms, _ := l.snapshot(); len(terms) >= n {
					return terms
				}
			}
			terms, _ := l.snapshot()
			t.Fatalf("terms %+v, want %d", terms, n)
			return nil
		}
		terms := waitTerms(2)
		if terms[0].who != "a" || terms[0].cause != leader.ErrTransferred || terms[1].who != "b" {
			t.Fatalf("terms %+v, want a's ended by ErrTransferred, then b's", terms)
		}
		// A request for a's ended term, as if sent late: b's term goes on.
		if _, err := operator.RequestTransfer(ctx, nil, w.members, "cron", info.Token, a.ID(), "test", ""); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * ttl)
		if terms, v := l.snapshot(); len(terms) != 2 || len(v) > 0 {
			t.Fatalf("after a request for an ended term: terms %+v, violations %v", terms, v)
		}
		// A request for b's term hands back to a.
		if _, err := operator.RequestTransfer(ctx, nil, w.members, "cron", terms[1].token, a.ID(), "test", ""); err != nil {
			t.Fatal(err)
		}
		terms = waitTerms(3)
		if terms[2].who != "a" || terms[1].cause != leader.ErrTransferred {
			t.Fatalf("terms %+v, want b's ended by ErrTransferred, then a's", terms)
		}
		if _, v := l.snapshot(); len(v) > 0 {
			t.Fatal(v)
		}
	})
}

// directiveReads counts the directive reads of a member store that
// serves them: of every directive, and of one term's transfer requests.
type directiveReads struct {
	*leadertest.MemoryMembers
	mu    sync.Mutex
	reads int
}

func (c *directiveReads) Directives(ctx context.Context, election string) ([]operator.Directive, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.MemoryMembers.Directives(ctx, election)
}

func (c *directiveReads) TransferRequests(ctx context.Context, election string, term uint64) ([]operator.Directive, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.MemoryMembers.TransferRequests(ctx, election, term)
}

func (c *directiveReads) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.reads }

// TestTransferRequestReads: a leader whose member store serves
// Directives reads them once per heartbeat (the documented cost of
// transfer requests); a candidate that waits reads none.
func TestTransferRequestReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		var stores [2]*directiveReads
		for i := range stores {
			stores[i] = &directiveReads{MemoryMembers: w.members}
			e := newElection(t, &proc{c: newClient(t, w.store.Process()), members: stores[i]})
			defer e.Close()
			wg.Go(func() { _ = e.Run(ctx, func(lctx context.Context) error { <-lctx.Done(); return nil }) })
			synctest.Wait()
		}
		time.Sleep(5 * time.Second)
		before := [2]int{stores[0].count(), stores[1].count()}
		time.Sleep(10 * ttl / 3) // ten heartbeats
		leading, waiting := stores[0].count()-before[0], stores[1].count()-before[1]
		if leading < 9 || leading > 11 || waiting != 0 {
			t.Errorf("directive reads over ten heartbeats: %d by the leader, %d by the waiting candidate; want about 10 and 0", leading, waiting)
		}
	})
}

// requestPair is a world where a leads and b waits, both run under Run
// with their terms logged, for the transfer request tests.
type requestPair struct {
	w    *world
	a, b *leader.Election
	l    *termLog
	ctx  context.Context
	wg   sync.WaitGroup
	info leader.Info // a's term
}

// newRequestPair starts a, then b, and returns once a leads; stop ends
// them.
func newRequestPair(t *testing.T, opts ...leader.Option) (p *requestPair, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	p = &requestPair{w: newWorld(), l: &termLog{}, ctx: ctx}
	p.a = newElection(t, p.w.process(t), opts...)
	p.b = newElection(t, p.w.process(t), opts...)
	p.wg.Go(func() { p.l.run(ctx, p.a, "a") })
	synctest.Wait()
	p.wg.Go(func() { p.l.run(ctx, p.b, "b") })
	synctest.Wait()
	stop = func() {
		cancel()
		p.wg.Wait()
		_ = p.a.Close()
		_ = p.b.Close()
	}
	info, err := p.a.Leader(ctx)
	if err != nil || info.ID != p.a.ID() {
		stop()
		t.Fatalf("Leader = %+v, %v; want a", info, err)
	}
	p.info = info
	return p, stop
}

// awaitB waits, at most d, until a second term began, and checks that a's
// ended by ErrTransferred and b's followed, and that no promise broke.
func (p *requestPair) awaitB(t *testing.T, d time.Duration) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if terms, _ := p.l.snapshot(); len(terms) >= 2 {
			if terms[0].cause != leader.ErrTransferred || terms[1].who != "b" {
				t.Fatalf("terms %+v, want a's ended by ErrTransferred, then b's", terms)
			}
			break
		}
		if time.Since(start) > d {
			terms, _ := p.l.snapshot()
			t.Fatalf("terms %+v: b does not lead", terms)
		}
	}
	if _, v := p.l.snapshot(); len(v) > 0 {
		t.Fatal(v)
	}
}

// TestTransferRequestAfterOneFailed: a request whose candidate is no
// live member fails, and does not use up the term: a second request in
// the same term is numbered after it, and acted on.
func TestTransferRequestAfterOneFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, stop := newRequestPair(t)
		defer stop()
		ctx := p.ctx
		time.Sleep(time.Second) // both candidates' status written
		if r, err := operator.RequestTransfer(ctx, nil, p.w.members, "cron", p.info.Token, "gone", "test", ""); err != nil || r.Gen != 1 {
			t.Fatalf("first request: %+v, %v", r, err)
		}
		time.Sleep(2 * ttl) // acted on, and failed: gone is no live candidate
		if terms, _ := p.l.snapshot(); len(terms) != 1 {
			t.Fatalf("after a request to no candidate: terms %+v, want a's alone", terms)
		}
		r, err := operator.RequestTransfer(ctx, nil, p.w.members, "cron", p.info.Token, p.b.ID(), "test", "")
		if err != nil || r.Gen != 2 {
			t.Fatalf("second request in a's term: %+v, %v; want number 2", r, err)
		}
		p.awaitB(t, 4*ttl)
	})
}

// slowRequests holds back the replies to reads of transfer requests
// while armed, until released.
type slowRequests struct {
	*leadertest.MemoryMembers
	armed   atomic.Bool
	release chan struct{}
}

func (s *slowRequests) TransferRequests(ctx context.Context, election string, term uint64) ([]operator.Directive, error) {
	ds, err := s.MemoryMembers.TransferRequests(ctx, election, term)
	if s.armed.Load() {
		<-s.release // the reply, delayed on its way
	}
	return ds, err
}

// TestTransferRequestOfAnEndedTerm: a request read for the leader's term
// is not acted on in a later term of the same candidate, when the term
// it named ends while the leader reads it (the read being slow), and the
// candidate leads again before the read returns.
func TestTransferRequestOfAnEndedTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx := context.Background()
		reqs := &slowRequests{MemoryMembers: w.members, release: make(chan struct{})}
		p := w.process(t)
		p.members = reqs
		a := newElection(t, p)
		defer a.Close()
		if _, err := a.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		info, err := a.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// b: a live member that never campaigns, so that a handover to
		// it shows in a's status, and stays there.
		if err := w.members.PutMember(ctx, "cron", leader.Member{ID: "b"}); err != nil {
			t.Fatal(err)
		}
		if _, err := operator.RequestTransfer(ctx, nil, w.members, "cron", info.Token, "b", "test", ""); err != nil {
			t.Fatal(err)
		}
		reqs.armed.Store(true)
		time.Sleep(ttl / 3) // a's heartbeat: blocked in the read
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		reqs.armed.Store(false)
		close(reqs.release)
		synctest.Wait()
		m, found, err := w.members.Member(ctx, "cron", a.ID())
		if err != nil || !found {
			t.Fatalf("a's status: %v, %v", found, err)
		}
		if m.Handover.To != "" {
			t.Errorf("a shows a handover to %q in term %d, for a request of its ended term %d", m.Handover.To, m.Handover.Term, info.Token)
		}
		if !a.IsLeader() {
			t.Error("a does not lead")
		}
	})
}

// TestTransferRequestOfTheTermLeadingNow: an operator with a Client and
// the member store, and no Election of its own, asks the term that leads
// now (term 0): RequestTransfer reads it from the lease, the request
// names a's term, and b leads next. The operator queued nothing and
// reported no status. Before anyone leads, such a request fails with
// ErrNoLeader and inserts nothing.
func TestTransferRequestOfTheTermLeadingNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op := newWorld().process(t)
		if r, err := operator.RequestTransfer(context.Background(), op.c, op.members.(operator.Directives), "cron", 0, "b", "test", ""); !errors.Is(err, leader.ErrNoLeader) {
			t.Errorf("a request of the term leading now, with nobody leading: %+v, %v; want ErrNoLeader", r, err)
		}
		if ds, err := op.members.(operator.Directives).Directives(context.Background(), "cron"); err != nil || len(ds) != 0 {
			t.Errorf("directives after it: %+v, %v; want none", ds, err)
		}
		if _, err := operator.RequestTransfer(context.Background(), nil, op.members.(operator.Directives), "cron", 0, "b", "test", ""); err == nil {
			t.Error("a request of the term leading now with no Client to read it: no error")
		}

		p, stop := newRequestPair(t)
		defer stop()
		ctx := p.ctx
		time.Sleep(time.Second) // both candidates' status written
		op = p.w.process(t)
		r, err := operator.RequestTransfer(ctx, op.c, p.w.members, "cron", 0, p.b.ID(), "test", "")
		if err != nil || r.Term != p.info.Token || r.Gen != 1 {
			t.Fatalf("request of the term leading now: %+v, %v; want number 1 of a's term %d", r, err, p.info.Token)
		}
		p.awaitB(t, 4*ttl)
		ms, err := p.w.members.Members(ctx, "cron", time.Hour)
		if err != nil || len(ms) != 2 {
			t.Errorf("members after the request: %+v, %v; want a and b alone", ms, err)
		}
		q, err := statuspage.NewReader(op.c).Queue(ctx, operator.LockKey("cron"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range q {
			if c.Owner != p.a.ID() && c.Owner != p.b.ID() {
				t.Errorf("the election's queue has a claim of %q, neither candidate's", c.Owner)
			}
		}
	})
}
