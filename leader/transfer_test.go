package leader_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// A termLog records the terms of candidates run under Run, and what
// breaks the election's promises: two terms at once, or a token that
// does not rise.
type termLog struct {
	mu         sync.Mutex
	leading    int
	terms      []loggedTerm
	violations []string
}

type loggedTerm struct {
	who   string
	token uint64
	began time.Time
	cause error // why it ended; nil while it lasts
}

// run runs e under Run until ctx ends, recording its terms as who's.
func (l *termLog) run(ctx context.Context, e *leader.Election, who string) {
	_ = e.Run(ctx, func(lctx context.Context) error {
		info, _ := leader.TermOf(lctx)
		i := l.begin(who, info.Token)
		<-lctx.Done()
		l.end(i, context.Cause(lctx))
		return lctx.Err()
	})
}

func (l *termLog) begin(who string, token uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading++
	if l.leading > 1 {
		l.violations = append(l.violations, fmt.Sprintf("%s began term %d while %d other terms lasted", who, token, l.leading-1))
	}
	if n := len(l.terms); n > 0 && token <= l.terms[n-1].token {
		l.violations = append(l.violations, fmt.Sprintf("%s's term %d after term %d", who, token, l.terms[n-1].token))
	}
	l.terms = append(l.terms, loggedTerm{who: who, token: token, began: time.Now()})
	return len(l.terms) - 1
}

func (l *termLog) end(i int, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading--
	l.terms[i].cause = cause
}

// snapshot returns the terms so far, and the violations.
func (l *termLog) snapshot() ([]loggedTerm, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedTerm(nil), l.terms...), append([]string(nil), l.violations...)
}

// transferScenario runs candidates a (which leads first) and behind
// queued after it in order, under Run, and has a transfer its leadership
// to behind[to]. It returns what broke the election's promises: terms
// that overlap, tokens that do not rise, another successor than
// behind[to], or a Transfer that did not return nil.
func transferScenario(t *testing.T, behind, to int) []string {
	w := newWorld()
	ctx, cancel := context.WithCancel(context.Background())
	l := &termLog{}
	var wg sync.WaitGroup
	start := func(who string) *leader.Election {
		e := newElection(t, w.process(t))
		wg.Go(func() { l.run(ctx, e, who) })
		synctest.Wait() // leads, or waits in the queue, before the next one starts
		return e
	}
	a := start("a")
	var es []*leader.Election
	for i := range behind {
		es = append(es, start(fmt.Sprintf("b%d", i)))
	}
	want := fmt.Sprintf("b%d", to)
	// Every candidate's status is written by then; and the transfer
	// begins between two of their heartbeats (each second), so that
	// none of them steps aside in the instant it begins.
	time.Sleep(time.Second + time.Second/2)

	tctx, tcancel := context.WithTimeout(context.Background(), time.Minute)
	defer tcancel()
	defer func() {
		cancel()
		wg.Wait()
		for _, e := range append(es, a) {
			if err := e.Close(); err != nil {
				t.Error(err)
			}
		}
	}()
	if err := a.Transfer(tctx, es[to].ID()); err != nil {
		return []string{fmt.Sprintf("Transfer = %v, want nil", err)}
	}
	for {
		if terms, _ := l.snapshot(); len(terms) >= 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	terms, violations := l.snapshot()
	if terms[0].who != "a" || terms[0].cause != leader.ErrTransferred {
		violations = append(violations, fmt.Sprintf("first term %+v, want a's, ended by ErrTransferred", terms[0]))
	}
	if terms[1].who != want {
		violations = append(violations, fmt.Sprintf("%s led after the transfer, want %s", terms[1].who, want))
	}
	return violations
}

// TestTransferToNext: the candidate asked for is next in the queue
// already: the leader hands over at once, and it leads next, after the
// leader's term ended.
func TestTransferToNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, v := range transferScenario(t, 2, 0) {
			t.Error(v)
		}
	})
}

// TestTransferPastQueuedCandidates: candidates queued ahead of the one
// asked for step aside, and it leads next; never two leaders at once,
// and tokens rise.
func TestTransferPastQueuedCandidates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, v := range transferScenario(t, 4, 3) {
			t.Error(v)
		}
	})
}

// TestTransferKeepsSteppedAsideCandidates: after a transfer past them,
// the candidates that stepped aside still campaign: each leads in turn
// as the new leader resigns.
func TestTransferKeepsSteppedAsideCandidates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx := context.Background()
		a := newElection(t, w.process(t))
		b := newElection(t, w.process(t))
		c := newElection(t, w.process(t))
		defer a.Close()
		defer b.Close()
		defer c.Close()
		if _, err := a.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		type won struct {
			who string
			ctx context.Context
		}
		elected := make(chan won, 2)
		go func() { lctx, _ := b.Campaign(ctx); elected <- won{"b", lctx} }()
		synctest.Wait()
		go func() { lctx, _ := c.Campaign(ctx); elected <- won{"c", lctx} }()
		synctest.Wait()
		time.Sleep(time.Second)
		tctx, tcancel := context.WithTimeout(ctx, time.Minute)
		defer tcancel()
		if err := a.Transfer(tctx, c.ID()); err != nil {
			t.Fatal(err)
		}
		if w := <-elected; w.who != "c" {
			t.Fatalf("%s leads after the transfer to c", w.who)
		}
		if a.IsLeader() {
			t.Fatal("a still leads after its transfer")
		}
		if err := c.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if w := <-elected; w.who != "b" {
			t.Fatalf("%s leads after c resigned, want b", w.who)
		}
	})
}

// TestTransferRefusals: Transfer by a candidate that does not lead, to a
// candidate that is no live member, or without a member store, hands
// nothing over; to itself, it keeps leading.
func TestTransferRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx := context.Background()
		a := newElection(t, w.process(t))
		b := newElection(t, w.process(t))
		defer a.Close()
		defer b.Close()
		if err := a.Transfer(ctx, b.ID()); err != leader.ErrNotLeader {
			t.Fatalf("Transfer before leading = %v, want ErrNotLeader", err)
		}
		lctx, err := a.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Transfer(ctx, b.ID()); !errors.Is(err, leader.ErrNotCandidate) {
			t.Fatalf("Transfer to a candidate that never campaigned = %v, want ErrNotCandidate", err)
		}
		if err := a.Transfer(ctx, a.ID()); err != nil {
			t.Fatalf("Transfer to itself = %v, want nil", err)
		}
		if lctx.Err() != nil || !a.IsLeader() {
			t.Fatal("a refused Transfer ended the term")
		}

		p := w.process(t)
		bare, err := leader.NewElection(p.c, "bare", quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer bare.Close()
		if _, err := bare.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := bare.Transfer(ctx, a.ID()); err != leader.ErrNoMembers {
			t.Fatalf("Transfer without a member store = %v, want ErrNoMembers", err)
		}
	})
}

// TestTransferContextEnds: the candidate asked for is a live member but
// does not campaign, so it never comes next: Transfer returns its
// context's cause once that ends, the leader keeps leading, its status
// shows no handover any more, and a waiting candidate that stepped
// aside still waits.
func TestTransferContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx := context.Background()
		a := newElection(t, w.process(t))
		b := newElection(t, w.process(t))
		c := newElection(t, w.process(t))
		defer a.Close()
		defer b.Close()
		defer c.Close()
		lctx, err := a.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// b campaigns, and stops: its status lives on (its heartbeat), its
		// claim is withdrawn.
		bctx, bstop := context.WithCancel(ctx)
		go b.Campaign(bctx)
		synctest.Wait()
		bstop()
		cElected := make(chan struct{})
		go func() {
			if _, err := c.Campaign(ctx); err == nil {
				close(cElected)
			}
		}()
		time.Sleep(time.Second)

		tctx, tcancel := context.WithTimeoutCause(ctx, 5*time.Second, errors.New("gave up"))
		defer tcancel()
		if err := a.Transfer(tctx, b.ID()); err == nil || err.Error() != "gave up" {
			t.Fatalf("Transfer = %v, want its context's cause", err)
		}
		if lctx.Err() != nil || !a.IsLeader() {
			t.Fatal("the term ended with a Transfer that did not hand over")
		}
		ms, err := a.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Handover != (leader.Handover{}) {
				t.Fatalf("member %s shows handover %+v after Transfer returned", m.ID, m.Handover)
			}
		}
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		<-cElected
	})
}

// TestTransferFromRun: Run's function hands the leadership over itself,
// under its own context: Transfer returns once the term is cancelled,
// and the candidate asked for leads once the function has returned.
func TestTransferFromRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx, cancel := context.WithCancel(context.Background())
		a := newElection(t, w.process(t))
		b := newElection(t, w.process(t))
		c := newElection(t, w.process(t))
		defer a.Close()
		defer b.Close()
		defer c.Close()
		handOver := make(chan struct{})
		transferred := make(chan error, 1)
		var wg sync.WaitGroup
		wg.Go(func() {
			first := true
			_ = a.Run(ctx, func(lctx context.Context) error {
				if first {
					first = false
					<-handOver
					transferred <- a.Transfer(lctx, c.ID())
				}
				<-lctx.Done()
				return lctx.Err()
			})
		})
		synctest.Wait()
		wg.Go(func() { _, _ = b.Campaign(ctx) })
		synctest.Wait()
		elected := make(chan struct{})
		wg.Go(func() {
			if _, err := c.Campaign(ctx); err == nil {
				close(elected)
			}
		})
		synctest.Wait()
		time.Sleep(time.Second)
		close(handOver)
		if err := <-transferred; err != nil {
			t.Fatalf("Transfer from Run's function = %v, want nil", err)
		}
		<-elected
		if b.IsLeader() {
			t.Fatal("b leads beside c")
		}
		cancel()
		wg.Wait()
	})
}

// TestTransferCandidateLeaves: the candidate asked for leaves while the
// leader waits for it: Transfer returns ErrNotCandidate, and the leader
// keeps leading.
func TestTransferCandidateLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx := context.Background()
		a := newElection(t, w.process(t))
		b := newElection(t, w.process(t))
		defer a.Close()
		lctx, err := a.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// b is live (its heartbeat goes on) but holds no claim.
		bctx, bstop := context.WithCancel(ctx)
		go b.Campaign(bctx)
		synctest.Wait()
		bstop()
		time.Sleep(time.Second)
		go func() {
			time.Sleep(3 * time.Second)
			b.Close()
		}()
		tctx, tcancel := context.WithTimeout(ctx, time.Minute)
		defer tcancel()
		if err := a.Transfer(tctx, b.ID()); !errors.Is(err, leader.ErrNotCandidate) {
			t.Fatalf("Transfer to a candidate that left = %v, want ErrNotCandidate", err)
		}
		if lctx.Err() != nil || !a.IsLeader() {
			t.Fatal("the term ended with a Transfer that did not hand over")
		}
	})
}
