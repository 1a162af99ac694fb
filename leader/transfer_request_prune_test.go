package leader_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/leader/operator"
)

// termReads is a member store that serves TransferRequests, recording
// which terms' requests were read and which pruned.
type termReads struct {
	*leadertest.MemoryMembers
	mu     sync.Mutex
	all    int      // Directives calls
	read   []uint64 // the term of each TransferRequests call
	pruned []uint64 // the term of each PruneTransferRequests call
}

func (c *termReads) Directives(ctx context.Context, election string) ([]operator.Directive, error) {
	c.mu.Lock()
	c.all++
	c.mu.Unlock()
	return c.MemoryMembers.Directives(ctx, election)
}

func (c *termReads) TransferRequests(ctx context.Context, election string, term uint64) ([]operator.Directive, error) {
	c.mu.Lock()
	c.read = append(c.read, term)
	c.mu.Unlock()
	return c.MemoryMembers.TransferRequests(ctx, election, term)
}

func (c *termReads) PruneTransferRequests(ctx context.Context, election string, term uint64) error {
	c.mu.Lock()
	c.pruned = append(c.pruned, term)
	c.mu.Unlock()
	return c.MemoryMembers.PruneTransferRequests(ctx, election, term)
}

// TestTransferRequestsOfTheTermAlone: a leader whose member store serves
// TransferRequests reads its own term's requests at each heartbeat, and
// never every directive; it deletes the requests of the terms before its
// own once per term, and no drain.
func TestTransferRequestsOfTheTermAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx, cancel := context.WithCancel(context.Background())
		store := &termReads{MemoryMembers: w.members}
		put := func(d operator.Directive) {
			t.Helper()
			if err := w.members.PutDirective(ctx, "cron", d); err != nil {
				t.Fatal(err)
			}
		}
		// Requests of ended terms, the old key's among them, and drains.
		put(operator.Directive{Kind: operator.DirectiveTransfer, Term: 1, Member: "x"})
		put(operator.Directive{Kind: operator.DirectiveTransfer, Term: 1, Gen: 3, Member: "x"})
		put(operator.Directive{Kind: operator.DirectiveDrain, Member: "m", Gen: 1, Drain: true})
		put(operator.Directive{Kind: operator.DirectiveDrain, Member: "m", Gen: 2})
		var wg sync.WaitGroup
		e := newElection(t, &proc{c: newClient(t, w.store.Process()), members: store})
		wg.Go(func() { _ = e.Run(ctx, func(lctx context.Context) error { <-lctx.Done(); return nil }) })
		defer func() { cancel(); wg.Wait(); _ = e.Close() }()
		synctest.Wait()
		info, err := e.Leader(ctx)
		if err != nil || info.ID != e.ID() {
			t.Fatalf("Leader = %+v, %v", info, err)
		}
		time.Sleep(10 * ttl / 3) // ten heartbeats
		// A request for an ended term, landing late: it stays, and is
		// never acted on.
		put(operator.Directive{Kind: operator.DirectiveTransfer, Term: 1, Gen: 4, Member: "x"})
		time.Sleep(10 * ttl / 3)
		store.mu.Lock()
		all, read, pruned := store.all, store.read, store.pruned
		store.mu.Unlock()
		if all != 0 {
			t.Errorf("the leader read every directive %d times; want its term's requests alone", all)
		}
		if len(read) < 18 || len(read) > 22 {
			t.Errorf("the leader read its term's requests %d times over twenty heartbeats; want one a heartbeat", len(read))
		}
		for _, term := range read {
			if term != info.Token {
				t.Fatalf("the leader of term %d read the requests of terms %v", info.Token, read)
			}
		}
		if len(pruned) != 1 || pruned[0] != info.Token {
			t.Errorf("the leader of term %d pruned %v; want once, before its term", info.Token, pruned)
		}
		ds, err := w.members.Directives(ctx, "cron")
		if err != nil {
			t.Fatal(err)
		}
		var drains, requests int
		for _, d := range ds {
			switch {
			case d.Kind == operator.DirectiveDrain:
				drains++
			case d.Gen == 4:
				requests++
			default:
				t.Errorf("directive %+v is left; want it deleted", d)
			}
		}
		if drains != 2 || requests != 1 {
			t.Errorf("left %d drains and %d requests (%+v); want the two drains and the late request", drains, requests, ds)
		}
	})
}
