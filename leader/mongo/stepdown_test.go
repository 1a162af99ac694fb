package leadermongo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
)

// TestStepDownKeepsTerm: the primary of a replica set steps down
// (replSetStepDown, as a rolling upgrade or an Atlas maintenance does)
// while one of three candidates leads (keepsTermThrough).
//
// It runs only on a replica set, which this machine cannot start (no
// Docker engine, no mongod): the workflow's replset job runs it.
// TestPauseKeepsTerm runs the same on the embedded server, stopped.
func TestStepDownKeepsTerm(t *testing.T) {
	t.Parallel()
	db := mongotest.NewDatabase(t)
	mongotest.SkipUnlessReplicaSet(t, t.Context(), db.Client())
	keepsTermThrough(t, db, func(ctx context.Context) { mongotest.StepDown(t, ctx, db.Client()) })
}

// TestPauseKeepsTerm is TestStepDownKeepsTerm on a server of its own
// (the embedded one, here), stopped with SIGSTOP for four TTLs instead
// of stepped down: an outage of the store for everyone, which the
// default outage grace (30 s) covers. Long only:
//
//	DSYNC_LONG=1 go test ./leader/mongo -run 'TestPauseKeepsTerm$' -v
func TestPauseKeepsTerm(t *testing.T) {
	longtest.Skip(t)
	t.Parallel()
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	keepsTermThrough(t, db, func(context.Context) {
		srv.Pause()
		time.Sleep(4 * stepdownTTL)
		srv.Resume()
	})
}

// stepdownTTL is the candidates' TTL in keepsTermThrough: short, so
// that a deadline passes in the outage.
const stepdownTTL = 3 * time.Second

// keepsTermThrough: three candidates on db, each a process of its own;
// one leads when outage runs. The leader campaigns again whenever its
// term's context ends with a cause wrapping dsync.ErrSuspended (a
// deadline passed in the outage), as the outage grace has a program do.
// Afterwards the same candidate leads with the token of before, and
// neither other candidate's Campaign returned: the term was not changed,
// and nobody else led in between.
func keepsTermThrough(t *testing.T, db *mongo.Database, outage func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const ttl = stepdownTTL
	es := make([]*leader.Election, 3)
	for i := range es {
		es[i] = elect(t, newElections(t, db, dsync.ClientWithTTL(ttl)), "stepdown")
		t.Cleanup(func() { es[i].Close() })
	}
	lctx, err := es[0].Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := leader.TermOf(lctx)
	others := make(chan error, len(es)-1)
	for _, e := range es[1:] {
		go func() {
			_, err := e.Campaign(ctx)
			others <- err
		}()
	}

	// The leader campaigns again each time its term is lost to a
	// suspension, until done; it sends the term it leads in at the end.
	done := make(chan struct{})
	terms := make(chan context.Context, 1)
	go func() {
		cur := lctx
		for {
			select {
			case <-cur.Done():
				if !errors.Is(context.Cause(cur), dsync.ErrSuspended) {
					terms <- cur
					return
				}
				next, err := es[0].Campaign(ctx)
				if err != nil {
					t.Errorf("Campaign again after the term was suspended (%v): %v; want the term back", context.Cause(cur), err)
					terms <- cur
					return
				}
				cur = next
			case <-done:
				terms <- cur
				return
			}
		}
	}()

	outage(ctx)
	// Three TTLs after the store answers again: a deadline that passed in
	// the outage has been met, the resume checked, the term taken back,
	// and a candidate that would take over has.
	time.Sleep(3 * ttl)
	close(done)
	term := <-terms
	if err := term.Err(); err != nil {
		t.Fatalf("the leader's term ended after the outage: %v", context.Cause(term))
	}
	after, _ := leader.TermOf(term)
	if after.Token != before.Token {
		t.Errorf("the leader's token is %d after the outage, %d before: the term changed", after.Token, before.Token)
	}
	if info, err := es[0].Leader(ctx); err != nil || info.ID != es[0].ID() || info.Token != before.Token {
		t.Errorf("Leader after the outage = %+v, %v; want %s with token %d", info, err, es[0].ID(), before.Token)
	}
	select {
	case err := <-others:
		t.Errorf("another candidate's Campaign returned (%v) while the leader led", err)
	default:
	}
	t.Logf("outage at TTL %v: the leader kept its term, token %d", ttl, before.Token)
	if err := es[0].Resign(ctx); err != nil {
		t.Errorf("Resign: %v", err)
	}
	if err := <-others; err != nil {
		t.Errorf("a standby's Campaign after the leader resigned: %v", err)
	}
}
