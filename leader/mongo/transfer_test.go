package leadermongo_test

import (
	"context"
	"fmt"
	"github.com/go-dsync/dsync/leader/operator"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/statuspage"
)

// transferTerm is one term of TestTransfer's candidates.
type transferTerm struct {
	who        int
	token      uint64
	begin, end time.Time
	cause      error
}

// TestTransfer hands leadership round and round on the embedded server,
// each time to the candidate queued last (the previous leader, which
// campaigned again): the candidates ahead of it step aside, it leads
// next, and no two terms ever overlap (each term's function has returned
// before the next begins), with tokens rising. It logs each gap from one
// term's end to the next's beginning.
func TestTransfer(t *testing.T) {
	t.Parallel()
	db := mongotest.NewDatabase(t)
	// Three transfers, each way between two candidates at least once, in
	// the short form; six in the long form (DSYNC_LONG=1, as CI runs it).
	const candidates = 4
	transfers := 3
	if longtest.Enabled() {
		transfers = 6
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := leader.WithLogger(slog.New(slog.DiscardHandler))

	var (
		mu       sync.Mutex
		leading  int
		overlaps int
		terms    []transferTerm
	)
	run := func(who int, e *leader.Election) {
		_ = e.Run(ctx, func(lctx context.Context) error {
			info, _ := leader.TermOf(lctx)
			mu.Lock()
			leading++
			if leading > 1 {
				overlaps++
			}
			if n := len(terms); n > 0 && info.Token <= terms[n-1].token {
				t.Errorf("term %d after term %d", info.Token, terms[n-1].token)
			}
			i := len(terms)
			terms = append(terms, transferTerm{who: who, token: info.Token, begin: time.Now()})
			mu.Unlock()
			<-lctx.Done()
			mu.Lock()
			leading--
			terms[i].end, terms[i].cause = time.Now(), context.Cause(lctx)
			mu.Unlock()
			return lctx.Err()
		})
	}
	lastTerm := func() (transferTerm, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(terms) == 0 {
			return transferTerm{}, 0
		}
		return terms[len(terms)-1], len(terms)
	}

	var es []*leader.Election
	var wg sync.WaitGroup
	for i := range candidates {
		// A TTL long enough that a busy machine's late renewals do not
		// end the term a transfer starts from.
		p := newElections(t, db, dsync.ClientWithTTL(10*time.Second))
		e := elect(t, p, "transfer", quiet, leader.WithPollInterval(20*time.Millisecond))
		es = append(es, e)
		wg.Go(func() { run(i, e) })
		// Queue in order: wait for this candidate's claim.
		waitFor(t, func() bool {
			q, err := statuspage.NewReader(p.c).Queue(ctx, operator.LockKey("transfer"))
			return err == nil && len(q) == i+1
		})
	}
	defer func() {
		cancel()
		wg.Wait()
		for _, e := range es {
			_ = e.Close()
		}
	}()

	to := candidates - 1 // the last queued
	for range transfers {
		cur, n := lastTerm()
		waitFor(t, func() bool { ms, err := es[to].Members(ctx); return err == nil && len(ms) == candidates })
		tctx, tcancel := context.WithTimeout(ctx, 30*time.Second)
		err := es[cur.who].Transfer(tctx, es[to].ID())
		tcancel()
		if err != nil {
			t.Fatalf("transfer from %d to %d: %v", cur.who, to, err)
		}
		waitFor(t, func() bool { _, m := lastTerm(); return m > n })
		next, _ := lastTerm()
		mu.Lock()
		prev := terms[n-1]
		mu.Unlock()
		if next.who != to {
			t.Fatalf("candidate %d leads after a transfer to %d", next.who, to)
		}
		if prev.cause != leader.ErrTransferred {
			t.Fatalf("term of %d ended with %v, want ErrTransferred", prev.who, prev.cause)
		}
		t.Logf("transfer %d → %d: gap from the old term's end to the new one's beginning %v",
			prev.who, next.who, next.begin.Sub(prev.end).Round(100*time.Microsecond))
		to = prev.who // it campaigns again, behind the others
	}
	mu.Lock()
	defer mu.Unlock()
	if overlaps != 0 {
		t.Fatalf("%d overlapping terms", overlaps)
	}
}

// waitFor polls cond until it holds, for up to a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(fmt.Errorf("condition not met within a minute"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
