package leader_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// Terms across an outage of the store (dsync.ClientWithOutageGrace), on
// the store in memory: every process cut off at once (an outage of the
// store) or one alone (a partition), in a synctest bubble.

const outGrace = 30 * time.Second

// outageWorld is candidates in processes of their own on one store in
// memory, each Client with the grace grace.
type outageWorld struct {
	*world
	procs []*proc
	// ctx ends with the test: the campaigns it bounds end then.
	ctx    context.Context
	cancel context.CancelFunc
}

func newOutageWorld(t *testing.T, n int, grace time.Duration) *outageWorld {
	w := &outageWorld{world: newWorld()}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	t.Cleanup(w.cancel)
	for range n {
		w.procs = append(w.procs, w.process(t, dsync.ClientWithOutageGrace(grace)))
	}
	return w
}

// down cuts every process off the store and the member store (up: both
// reachable again).
func (w *outageWorld) down(down bool) {
	for _, p := range w.procs {
		p.store.SetReachable(!down)
	}
	w.members.SetReachable(!down)
}

// campaigned is a Campaign's outcome.
type campaigned struct {
	ctx context.Context
	err error
}

// campaigner campaigns with e in a goroutine of its own, until ctx ends:
// the channel gets the outcome.
func campaigner(ctx context.Context, e *leader.Election) <-chan campaigned {
	done := make(chan campaigned, 1)
	go func() {
		lctx, err := e.Campaign(ctx)
		done <- campaigned{lctx, err}
	}()
	return done
}

// outcome returns c's outcome if there is one yet.
func outcome(c <-chan campaigned) (campaigned, bool) {
	select {
	case r := <-c:
		return r, true
	default:
		return campaigned{}, false
	}
}

// await returns c's outcome, or fails the test if it takes longer than
// limit.
func await(t *testing.T, c <-chan campaigned, limit time.Duration, what string) campaigned {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(limit):
		t.Fatalf("%s: no outcome within %v", what, limit)
		return campaigned{}
	}
}

// tokenOf is the token of the term behind ctx.
func tokenOf(t *testing.T, ctx context.Context) uint64 {
	t.Helper()
	info, ok := leader.TermOf(ctx)
	if !ok {
		t.Fatal("TermOf: not a leadership context")
	}
	return info.Token
}

// observed collects the leaders an Election observes until the test ends.
type observed struct {
	mu     sync.Mutex
	tokens []uint64
	done   chan struct{}
}

func observeLeaders(ctx context.Context, e *leader.Election) *observed {
	o := &observed{done: make(chan struct{})}
	ch := e.Observe(ctx)
	go func() {
		defer close(o.done)
		for info := range ch {
			o.mu.Lock()
			o.tokens = append(o.tokens, info.Token)
			o.mu.Unlock()
		}
	}()
	return o
}

func (o *observed) seen() []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]uint64(nil), o.tokens...)
}

// TestOutageCampaignTakesTermBack: an outage of the whole store for three
// TTLs, a leader, a candidate in another process and an observer in a
// third. The term ends at the lease's deadline, with a cause wrapping
// ErrLeadershipLost and dsync.ErrSuspended; Campaign called again waits
// for the verdict, and once the store is back returns the term back with
// the same token; the other candidate does not lead meanwhile, and the
// observer sees no other leader. Without the take-back, the leader's lock
// is released at the store's return and the other candidate leads.
func TestOutageCampaignTakesTermBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 3, outGrace)
		a, b, o := newElection(t, w.procs[0]), newElection(t, w.procs[1]), newElection(t, w.procs[2])
		defer o.Close()
		defer b.Close()
		defer a.Close()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		tok := tokenOf(t, lctx)
		other := campaigner(w.ctx, b)
		octx, stopObserving := context.WithCancel(w.ctx)
		seen := observeLeaders(octx, o)
		time.Sleep(ttl / 2)
		synctest.Wait()

		w.down(true)
		select {
		case <-lctx.Done():
		case <-time.After(ttl):
			t.Fatalf("the term still live %v into the outage", ttl)
		}
		if cause := context.Cause(lctx); !errors.Is(cause, leader.ErrLeadershipLost) || !errors.Is(cause, dsync.ErrSuspended) {
			t.Fatalf("the term's cause in the outage = %v; want ErrLeadershipLost and dsync.ErrSuspended", cause)
		}
		ctx, cancel := context.WithTimeout(w.ctx, 6*ttl)
		defer cancel()
		again := campaigner(ctx, a)
		time.Sleep(3 * ttl)
		synctest.Wait()
		if r, ok := outcome(again); ok {
			t.Fatalf("Campaign returned (%v) in the outage; want it waiting for the verdict", r.err)
		}
		w.down(false)
		r := await(t, again, ttl, "Campaign after the outage")
		if r.err != nil {
			t.Fatalf("Campaign after the outage = %v; want the term back", r.err)
		}
		if got := tokenOf(t, r.ctx); got != tok {
			t.Errorf("the token of the term taken back = %d; want %d, the same", got, tok)
		}
		time.Sleep(2 * ttl) // leads on, renewed
		synctest.Wait()
		if r.ctx.Err() != nil || !a.IsLeader() {
			t.Fatalf("the term taken back ended (%v)", context.Cause(r.ctx))
		}
		if r, ok := outcome(other); ok {
			t.Fatalf("the other candidate's Campaign returned (%v) while the term taken back lived", r.err)
		}
		if err := a.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		rb := await(t, other, ttl, "the other candidate's Campaign after the Resign")
		if rb.err != nil {
			t.Fatal(rb.err)
		}
		next := tokenOf(t, rb.ctx)
		if next <= tok {
			t.Errorf("the other candidate's token %d; want above %d", next, tok)
		}
		time.Sleep(3 * leader.DefaultPollInterval)
		synctest.Wait()
		stopObserving()
		<-seen.done
		if got := seen.seen(); !slices.Equal(got, []uint64{tok, next}) {
			t.Errorf("the observer saw leaders of terms %v; want %d, then %d only", got, tok, next)
		}
	})
}

// TestCutAloneCampaignSaysTermEnded: a leader cut off alone while the
// store stays up for the others: the other candidate leads once the
// lease runs out, and the cut leader's Campaign, once it reaches the
// store again, returns an error wrapping ErrLeadershipLost and
// dsync.ErrLost that says the term ended; the Campaign after that
// campaigns anew. Without the take-back, the Campaign campaigns anew at
// once and reports nothing.
func TestCutAloneCampaignSaysTermEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 2, outGrace)
		a, b := newElection(t, w.procs[0]), newElection(t, w.procs[1])
		defer b.Close()
		defer a.Close()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		tok := tokenOf(t, lctx)
		other := campaigner(w.ctx, b)
		time.Sleep(ttl / 2)
		synctest.Wait()

		w.procs[0].store.SetReachable(false)
		<-lctx.Done()
		ctx, cancel := context.WithTimeout(w.ctx, 8*ttl)
		defer cancel()
		again := campaigner(ctx, a)
		rb := await(t, other, 4*ttl, "the other candidate's Campaign, the leader cut off alone")
		if rb.err != nil {
			t.Fatal(rb.err)
		}
		next := tokenOf(t, rb.ctx)
		if next <= tok {
			t.Errorf("the other candidate's token %d; want above %d", next, tok)
		}
		w.procs[0].store.SetReachable(true)
		r := await(t, again, 2*ttl, "the cut leader's Campaign once it reaches the store")
		if !errors.Is(r.err, leader.ErrLeadershipLost) || !errors.Is(r.err, dsync.ErrLost) || !strings.Contains(r.err.Error(), "ended") {
			t.Fatalf("the cut leader's Campaign = %v, %v; want an error wrapping ErrLeadershipLost and dsync.ErrLost saying the term ended", r.ctx, r.err)
		}
		anew := campaigner(ctx, a)
		time.Sleep(ttl)
		synctest.Wait()
		if r, ok := outcome(anew); ok {
			t.Fatalf("the Campaign after the error returned (%v) while the other candidate leads", r.err)
		}
		if err := b.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		r = await(t, anew, ttl, "the Campaign after the error, once the other candidate resigned")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := tokenOf(t, r.ctx); got <= next {
			t.Errorf("the new term's token %d; want above %d", got, next)
		}
	})
}

// TestNoGraceCampaignAnew: without an outage grace nothing changes: a
// term lost in an outage of the store ends with ErrLeadershipLost, its
// lease runs out, and a Campaign after it campaigns anew: once the store
// is back, the old leader and the other candidate lead one after the
// other (whichever claims first: the outage ended every lease), each
// with a larger token than the term before.
func TestNoGraceCampaignAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 2, 0)
		a, b := newElection(t, w.procs[0]), newElection(t, w.procs[1])
		defer b.Close()
		defer a.Close()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		tok := tokenOf(t, lctx)
		other := campaigner(w.ctx, b)
		time.Sleep(ttl / 2)
		synctest.Wait()

		w.down(true)
		<-lctx.Done()
		if cause := context.Cause(lctx); cause != leader.ErrLeadershipLost {
			t.Fatalf("the term's cause in the outage = %v; want ErrLeadershipLost", cause)
		}
		ctx, cancel := context.WithTimeout(w.ctx, 10*ttl)
		defer cancel()
		again := campaigner(ctx, a)
		time.Sleep(3 * ttl)
		synctest.Wait()
		w.down(false)
		last := tok
		for range 2 {
			var r campaigned
			var e *leader.Election
			select {
			case r = <-again:
				e = a
			case r = <-other:
				e = b
			case <-time.After(2 * ttl):
				t.Fatalf("no term within %v after the store came back (the last %d)", 2*ttl, last)
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got := tokenOf(t, r.ctx); got <= last {
				t.Errorf("a term of token %d after the outage; want above %d", got, last)
			} else {
				last = got
			}
			if err := e.Resign(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// outageLoss has a lead for half a TTL, then cuts every process off the
// store for three TTLs, and returns once a's term ended and the store is
// back, with that term's token.
func outageLoss(t *testing.T, w *outageWorld, lctx context.Context) uint64 {
	t.Helper()
	tok := tokenOf(t, lctx)
	time.Sleep(ttl / 2)
	synctest.Wait()
	w.down(true)
	<-lctx.Done()
	time.Sleep(3 * ttl)
	synctest.Wait()
	w.down(false)
	return tok
}

// TestOutageTakeBackKeepsValue: the term taken back after an outage is
// the same term: the value proclaimed in it and its Rev are kept, so that
// observers never see a term's values go back. Without that, the term
// taken back starts again from WithValue's value and Rev 0.
func TestOutageTakeBackKeepsValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 1, outGrace)
		a := newElection(t, w.procs[0], leader.WithValue("start"))
		defer a.Close()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Proclaim(w.ctx, "moved"); err != nil {
			t.Fatal(err)
		}
		tok := outageLoss(t, w, lctx)
		again, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := leader.TermOf(again)
		if info.Token != tok || info.Value != "moved" || info.Rev != 1 {
			t.Errorf("the term taken back: token %d, value %q, Rev %d; want %d, %q, 1", info.Token, info.Value, info.Rev, tok, "moved")
		}
	})
}

// TestOutageCloseReleasesKeptLock: a term lost to an outage whose
// Election is closed instead of campaigning again: Close releases the
// kept lock, so that the other candidate leads at once, not a TTL after
// the store's return when the Client lets a claim nobody took back go.
func TestOutageCloseReleasesKeptLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 2, outGrace)
		a, b := newElection(t, w.procs[0]), newElection(t, w.procs[1])
		defer b.Close()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		other := campaigner(w.ctx, b)
		tok := outageLoss(t, w, lctx)
		time.Sleep(ttl / 4) // the verdict on the outage comes
		synctest.Wait()
		if r, ok := outcome(other); ok {
			t.Fatalf("the other candidate's Campaign returned (%v) while the lock was kept", r.err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		r := await(t, other, ttl/4, "the other candidate's Campaign after Close")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := tokenOf(t, r.ctx); got <= tok {
			t.Errorf("the other candidate's token %d; want above %d", got, tok)
		}
	})
}

// TestOutageRunTakesTermBack: Run, whose term is lost to an outage of the
// store, runs fn again once the store is back, in the same term (same
// token), and the other candidate does not lead.
func TestOutageRunTakesTermBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 2, outGrace)
		a, b := newElection(t, w.procs[0]), newElection(t, w.procs[1])
		defer b.Close()
		defer a.Close()
		terms := make(chan context.Context, 4)
		runCtx, stop := context.WithCancel(w.ctx)
		ran := make(chan error, 1)
		go func() {
			ran <- a.Run(runCtx, func(ctx context.Context) error {
				terms <- ctx
				<-ctx.Done()
				return nil
			})
		}()
		first := <-terms
		other := campaigner(w.ctx, b)
		tok := outageLoss(t, w, first)
		var again context.Context
		select {
		case again = <-terms:
		case <-time.After(ttl):
			t.Fatal("Run's fn not run again within a TTL of the store's return")
		}
		if got := tokenOf(t, again); got != tok {
			t.Errorf("Run's term after the outage has token %d; want %d, the same", got, tok)
		}
		time.Sleep(ttl)
		synctest.Wait()
		if r, ok := outcome(other); ok {
			t.Fatalf("the other candidate's Campaign returned (%v) while Run's term taken back lived", r.err)
		}
		stop()
		if err := <-ran; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v; want context.Canceled", err)
		}
	})
}

// TestCutAloneRunCampaignsAnew: Run, whose leader is cut off alone while
// the other candidate takes over, does not return the error that the
// term ended: it campaigns anew and leads again, in a new term, once the
// other candidate resigns.
func TestCutAloneRunCampaignsAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 2, outGrace)
		a, b := newElection(t, w.procs[0]), newElection(t, w.procs[1])
		defer b.Close()
		defer a.Close()
		terms := make(chan context.Context, 4)
		runCtx, stop := context.WithCancel(w.ctx)
		defer stop()
		ran := make(chan error, 1)
		go func() {
			ran <- a.Run(runCtx, func(ctx context.Context) error {
				terms <- ctx
				<-ctx.Done()
				return nil
			})
		}()
		first := <-terms
		tok := tokenOf(t, first)
		other := campaigner(w.ctx, b)
		time.Sleep(ttl / 2)
		synctest.Wait()
		w.procs[0].store.SetReachable(false)
		rb := await(t, other, 4*ttl, "the other candidate's Campaign, Run's leader cut off alone")
		if rb.err != nil {
			t.Fatal(rb.err)
		}
		next := tokenOf(t, rb.ctx)
		w.procs[0].store.SetReachable(true)
		time.Sleep(2 * ttl)
		synctest.Wait()
		select {
		case err := <-ran:
			t.Fatalf("Run returned %v after the outage ended its term; want it campaigning anew", err)
		default:
		}
		if err := b.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case ctx := <-terms:
			if got := tokenOf(t, ctx); got <= next || got <= tok {
				t.Errorf("Run's new term has token %d; want above %d", got, next)
			}
		case <-time.After(ttl):
			t.Fatal("Run did not lead again within a TTL of the other candidate's Resign")
		}
	})
}

// shardLog records which member runs which shard in which term.
type shardLog struct {
	mu   sync.Mutex
	cur  map[int]shardTerm // the runs now
	runs []shardRun        // every run begun, in order
}

type shardTerm struct {
	id    string
	token uint64
}

type shardRun struct {
	shard int
	shardTerm
}

func (l *shardLog) fn(id string) func(context.Context, int) error {
	return func(ctx context.Context, s int) error {
		info, _ := leader.TermOf(ctx)
		l.mu.Lock()
		l.cur[s] = shardTerm{id, info.Token}
		l.runs = append(l.runs, shardRun{s, shardTerm{id, info.Token}})
		l.mu.Unlock()
		<-ctx.Done()
		l.mu.Lock()
		if l.cur[s].id == id {
			delete(l.cur, s)
		}
		l.mu.Unlock()
		return nil
	}
}

// TestOutagePartitionShardsStay: a Partition of 16 shards over 4
// members, whose ticks do not fall together, through an outage of the
// whole store for four TTLs: every shard's term is lost at its deadline,
// and once the store is back each owner runs its shards again, in the
// same terms (same tokens); no shard runs on another member in between.
// Without the take-back in the shard's run, a run lost to the outage
// ends and the shard is campaigned for anew: new tokens.
func TestOutagePartitionShardsStay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 4, outGrace)
		l := &shardLog{cur: map[int]shardTerm{}}
		const n = 16
		for i, id := range []string{"a", "b", "c", "d"} {
			p, err := leader.NewPartition(w.procs[i].c, "jobs", n, leader.WithMembers(w.procs[i].members))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(w.ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = p.Run(ctx, l.fn(id)) }()
			t.Cleanup(func() { cancel(); <-done; _ = p.Close() })
			time.Sleep(370 * time.Millisecond) // ticks apart
		}
		time.Sleep(6 * ttl) // settled
		synctest.Wait()
		l.mu.Lock()
		before := maps.Clone(l.cur)
		from := len(l.runs)
		l.mu.Unlock()
		if len(before) != n {
			t.Fatalf("%d shards run before the outage; want %d", len(before), n)
		}

		w.down(true)
		time.Sleep(4 * ttl)
		synctest.Wait()
		l.mu.Lock()
		running := len(l.cur)
		l.mu.Unlock()
		if running != 0 {
			t.Fatalf("%d shards still run %v into the outage; want none (each term lost at its deadline)", running, 4*ttl)
		}
		w.down(false)
		time.Sleep(ttl)
		synctest.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		if !maps.Equal(l.cur, before) {
			t.Errorf("a TTL after the outage the shards run as %v; want as before it, %v", l.cur, before)
		}
		for _, r := range l.runs[from:] {
			if r.shardTerm != before[r.shard] {
				t.Errorf("shard %d ran on %s in term %d after the outage; before it: on %s in term %d", r.shard, r.id, r.token, before[r.shard].id, before[r.shard].token)
			}
		}
	})
}

// TestOutagePartitionViewKeepsMembers: after an outage of the whole
// store longer than a member's status lives (four intervals), every
// member's View still lists all four members as the store comes back:
// the time nobody could write is counted to nobody's age. Without that
// credit, each member reads only those that have written since the
// return, none at first, and the views differ for about an interval.
func TestOutagePartitionViewKeepsMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 4, outGrace)
		l := &shardLog{cur: map[int]shardTerm{}}
		var ps []*leader.Partition
		for i, id := range []string{"a", "b", "c", "d"} {
			p, err := leader.NewPartition(w.procs[i].c, "jobs", 16, leader.WithMembers(w.procs[i].members))
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
			ctx, cancel := context.WithCancel(w.ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = p.Run(ctx, l.fn(id)) }()
			t.Cleanup(func() { cancel(); <-done; _ = p.Close() })
			time.Sleep(370 * time.Millisecond) // ticks apart
		}
		time.Sleep(6 * ttl)
		synctest.Wait()
		w.down(true)
		time.Sleep(4 * ttl)
		synctest.Wait()
		w.down(false)
		for step := time.Duration(0); step < ttl; step += ttl / 10 {
			for i, p := range ps {
				v, err := p.View(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if len(v.Members) != len(ps) {
					t.Fatalf("%v after the store came back, member %d's View lists %d members; want %d", step, i, len(v.Members), len(ps))
				}
			}
			time.Sleep(ttl / 10)
			synctest.Wait()
		}
	})
}

// TestOutageCloseDuringTakeBack: Close while Campaign waits in the outage
// to take a term back: Campaign returns ErrClosed, and the kept lock is
// released once the store is back, so that the other candidate leads at
// once rather than a TTL after the store's return.
func TestOutageCloseDuringTakeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 2, outGrace)
		a, b := newElection(t, w.procs[0]), newElection(t, w.procs[1])
		defer b.Close()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		tok := tokenOf(t, lctx)
		other := campaigner(w.ctx, b)
		time.Sleep(ttl / 2)
		synctest.Wait()
		w.down(true)
		<-lctx.Done()
		again := campaigner(w.ctx, a)
		time.Sleep(ttl)
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- a.Close() }()
		r := await(t, again, ttl, "Campaign once Close ran")
		if !errors.Is(r.err, leader.ErrClosed) {
			t.Fatalf("Campaign once Close ran = %v; want ErrClosed", r.err)
		}
		time.Sleep(ttl)
		synctest.Wait()
		w.down(false)
		rb := await(t, other, ttl/2, "the other candidate's Campaign once the store is back")
		if rb.err != nil {
			t.Fatal(rb.err)
		}
		if got := tokenOf(t, rb.ctx); got <= tok {
			t.Errorf("the other candidate's token %d; want above %d", got, tok)
		}
		<-closed // its removal of the member status failed in the outage
	})
}

// TestOutageResignReleasesKeptLock: Resign once a term lost to an outage
// has ended releases the lock it kept: the other candidate leads at once,
// not a TTL after the store's return, and the next Campaign campaigns
// anew, behind it.
func TestOutageResignReleasesKeptLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 2, outGrace)
		a, b := newElection(t, w.procs[0]), newElection(t, w.procs[1])
		defer b.Close()
		defer a.Close()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		other := campaigner(w.ctx, b)
		tok := outageLoss(t, w, lctx)
		time.Sleep(ttl / 4) // the verdict on the outage comes
		synctest.Wait()
		if err := a.Resign(w.ctx); err != nil {
			t.Fatal(err)
		}
		rb := await(t, other, ttl/4, "the other candidate's Campaign after the Resign")
		if rb.err != nil {
			t.Fatal(rb.err)
		}
		next := tokenOf(t, rb.ctx)
		if next <= tok {
			t.Errorf("the other candidate's token %d; want above %d", next, tok)
		}
		anew := campaigner(w.ctx, a)
		time.Sleep(ttl)
		synctest.Wait()
		if r, ok := outcome(anew); ok {
			t.Fatalf("Campaign after the Resign returned (%v) while the other candidate leads", r.err)
		}
		if err := b.Resign(w.ctx); err != nil {
			t.Fatal(err)
		}
		r := await(t, anew, ttl, "Campaign after the Resign, once the other candidate resigned")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := tokenOf(t, r.ctx); got <= next {
			t.Errorf("the new term's token %d; want above %d", got, next)
		}
	})
}

// TestOutageResignRacesCampaign: Resign and Campaign called together once
// a term lost to an outage has ended: whichever comes first, the term
// Campaign returns is taken back with the same token or won anew with a
// larger one, and lives until Resign ends it (if Resign came after):
// never a term on a lock Resign unlocked, which would end at once as
// lost.
func TestOutageResignRacesCampaign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 1, outGrace)
		a := newElection(t, w.procs[0])
		defer a.Close()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		tok := outageLoss(t, w, lctx)
		time.Sleep(ttl / 4) // the verdict on the outage comes
		synctest.Wait()
		resigned := make(chan error, 1)
		go func() { resigned <- a.Resign(w.ctx) }()
		r := await(t, campaigner(w.ctx, a), ttl, "Campaign beside Resign")
		if err := <-resigned; err != nil {
			t.Fatal(err)
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := tokenOf(t, r.ctx); got < tok {
			t.Fatalf("the term's token %d; want %d or above", got, tok)
		}
		time.Sleep(2 * ttl)
		synctest.Wait()
		if cause := context.Cause(r.ctx); cause != nil && cause != leader.ErrResigned {
			t.Fatalf("the term Campaign returned beside Resign ended: %v; want it live or resigned", cause)
		}
	})
}

// TestOutageResignAsTermIsKept: Resign called just as a term lost to an
// outage ends, after its watch took the term to keep its lock and before
// it kept it, gives that lock up too: the other candidate leads at once,
// and the next Campaign campaigns anew. Before, Resign waited for the term
// to end and returned nil with the lock kept, and that Campaign took the
// term back with its token (the public-API simulation's outage seed 2209:
// a token "not below" the term before it).
func TestOutageResignAsTermIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(t, 2, outGrace)
		a, b := newElection(t, w.procs[0]), newElection(t, w.procs[1])
		defer b.Close()
		defer a.Close()
		entered, goOn := make(chan struct{}), make(chan struct{})
		defer leader.SetKeepingHook(func() {
			close(entered)
			<-goOn
		})()
		lctx, err := a.Campaign(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		other := campaigner(w.ctx, b)
		tok := tokenOf(t, lctx)
		time.Sleep(ttl / 2)
		synctest.Wait()
		w.down(true)
		<-entered // the term is lost; its watch is about to keep the lock
		resigned := make(chan error, 1)
		go func() { resigned <- a.Resign(w.ctx) }()
		synctest.Wait() // Resign waits for the term to end
		close(goOn)
		time.Sleep(3 * ttl)
		synctest.Wait()
		w.down(false)
		if err := <-resigned; err != nil {
			t.Fatalf("Resign = %v", err)
		}
		rb := await(t, other, ttl/2, "the other candidate's Campaign after the Resign")
		if rb.err != nil {
			t.Fatal(rb.err)
		}
		if next := tokenOf(t, rb.ctx); next <= tok {
			t.Errorf("the other candidate's token %d; want above %d", next, tok)
		}
		if err := b.Resign(w.ctx); err != nil {
			t.Fatal(err)
		}
		r := await(t, campaigner(w.ctx, a), ttl, "Campaign after the Resign, once the other candidate resigned")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := tokenOf(t, r.ctx); got <= tok {
			t.Errorf("Campaign after the Resign led with token %d; want a new term, above %d", got, tok)
		}
	})
}
