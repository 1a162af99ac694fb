package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// A term whose work deadlocks ends, and the next candidate leads within
// the progress deadline plus one TTL of the work's last report: the
// stalled term's context is cancelled with the cause leader.ErrStalled
// before the next candidate leads, with a higher token.
func TestStalledTerm(t *testing.T) {
	trials := 3
	if longtest.Enabled() {
		trials = 20
	}
	cs := progressProcs(t, 2)
	var worst time.Duration
	for i := range trials {
		took, err := stallTerm(cs[0], cs[1], fmt.Sprintf("term-%d", i))
		if err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		worst = max(worst, took)
	}
	t.Logf("%d stalled terms (d=%v, TTL=%v): the next candidate led at most %v after the last report (promised d+TTL = %v)",
		trials, progressDeadline, progressTTL, msRound(worst), progressDeadline+progressTTL)
	if worst > replacedWithin {
		t.Errorf("the next candidate led %v after the stalled term's last report, above %v (d + TTL = %v, with a busy machine's slack)", worst, replacedWithin, progressDeadline+progressTTL)
	}
}

// stallTerm stalls a term of election name led by a candidate of c1,
// while a candidate of c2 campaigns, and returns how long after the
// term's last report the second led.
func stallTerm(c1, c2 *dsync.Client, name string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stuck, err := leader.NewElection(c1, name, leader.WithProgressDeadline(progressDeadline))
	if err != nil {
		return 0, err
	}
	defer stuck.Close()
	next, err := leader.NewElection(c2, name)
	if err != nil {
		return 0, err
	}
	defer next.Close()
	term, err := stuck.Campaign(ctx)
	if err != nil {
		return 0, fmt.Errorf("first candidate: %w", err)
	}
	first, _ := leader.TermOf(term)
	type elected struct {
		at         time.Time
		stuckEnded bool
		term       context.Context
		err        error
	}
	won := make(chan elected, 1)
	go func() {
		t2, err := next.Campaign(ctx)
		e := elected{at: time.Now(), term: t2, err: err}
		select {
		case <-term.Done():
			e.stuckEnded = true
		default:
		}
		won <- e
	}()
	// Work that moves while the second candidate queues, and a little
	// longer.
	stop := make(chan struct{})
	lastReport := reportUntil(func() { leader.Progress(term) }, stop)
	err = awaitQueued(ctx, c2, operator.LockKey(name), 2, term.Done())
	if err == nil {
		time.Sleep(progressDeadline / 2)
	}
	close(stop)
	last := <-lastReport
	if err != nil {
		return 0, err
	}
	// The work deadlocks.
	e := <-won
	if e.err != nil {
		return 0, fmt.Errorf("second candidate: %w", e.err)
	}
	took := e.at.Sub(last)
	if !e.stuckEnded {
		return took, errors.New("the second candidate led while the stalled term's context was live")
	}
	if cause := context.Cause(term); cause != leader.ErrStalled {
		return took, fmt.Errorf("the stalled term's cause is %v, want leader.ErrStalled", cause)
	}
	second, _ := leader.TermOf(e.term)
	if second.Token <= first.Token {
		return took, fmt.Errorf("the second term's token %d is not above the stalled term's %d", second.Token, first.Token)
	}
	return took, nil
}
