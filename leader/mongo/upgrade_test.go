package leadermongo_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
)

// TestRollingUpgrade upgrades five candidates of version 1.0.0, one at a
// time, to 2.0.0 under WithVersionRule on the embedded server, in surge
// order: start the new candidate (with a priority, which its member
// status must carry), wait until it is a live member, close the old one,
// let a few heartbeats pass (fewer in the short form: see the loop).
// Leadership changes at most once per step, never goes back to 1.0.0
// once 2.0.0 led, ends on 2.0.0, and no two terms overlap (each term's
// function has returned before the next begins), with tokens rising. The
// pre-term gate reads through ConfirmedMembers here (read concern
// majority).
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	db := mongotest.NewDatabase(t)
	// A heartbeat's writes have its interval to finish, and a term its TTL
	// between renewals: long enough for a busy machine's server.
	const heartbeat = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := leader.WithLogger(slog.New(slog.DiscardHandler))

	type term struct {
		who   string
		token uint64
	}
	var (
		mu       sync.Mutex
		leading  int
		overlaps int
		terms    []term
	)
	var wg sync.WaitGroup
	es := map[string]*leader.Election{}
	start := func(who, version string, priority int) *leader.Election {
		p := newElections(t, db, dsync.ClientWithTTL(10*time.Second))
		e := elect(t, p, "upgrade", quiet, leader.WithHeartbeatInterval(heartbeat),
			leader.WithVersion(version), leader.WithVersionRule(nil), leader.WithPriority(priority))
		es[who] = e
		wg.Go(func() {
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
				terms = append(terms, term{who, info.Token})
				mu.Unlock()
				<-lctx.Done()
				mu.Lock()
				leading--
				mu.Unlock()
				return lctx.Err()
			})
		})
		waitFor(t, func() bool {
			ms, err := e.Members(ctx)
			return err == nil && slices.ContainsFunc(ms, func(m leader.Member) bool {
				return m.ID == e.ID() && m.Version == version && m.Priority == priority
			})
		})
		return e
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(terms) }
	defer func() {
		cancel()
		wg.Wait()
		for _, e := range es {
			_ = e.Close()
		}
	}()

	for i := range 5 {
		start(fmt.Sprintf("old%d", i), "1.0.0", 0)
	}
	waitFor(t, func() bool { return count() == 1 })
	// Each step watches for a change of leader it should not cause for a
	// window of heartbeats: five in the long form (DSYNC_LONG=1, as CI
	// runs it), one in the short one, where the windows are most of the
	// test's time (and the package's last minute of the README's
	// command); the last step watches for five in the long form and
	// three in the short, so the leader the test ends on has held
	// through a window.
	window, last := heartbeat, 3*heartbeat
	if longtest.Enabled() {
		window, last = 5*heartbeat, 5*heartbeat
	}
	for i := range 5 {
		before := count()
		start(fmt.Sprintf("new%d", i), "2.0.0", i+1)
		old := fmt.Sprintf("old%d", i)
		if err := es[old].Close(); err != nil {
			t.Errorf("close %s: %v", old, err)
		}
		delete(es, old)
		if i == 0 {
			waitFor(t, func() bool { return count() > before })
		}
		if i == 4 {
			window = last
		}
		time.Sleep(window)
		if n := count() - before; n > 1 {
			t.Errorf("step %d: %d changes of leader", i, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("terms: %v", terms)
	if overlaps != 0 {
		t.Errorf("%d overlapping terms", overlaps)
	}
	newer := false
	for _, tm := range terms {
		isNew := tm.who[:3] == "new"
		if newer && !isNew {
			t.Errorf("%s (1.0.0) led term %d after a 2.0.0 term", tm.who, tm.token)
		}
		newer = newer || isNew
	}
	if last := terms[len(terms)-1]; last.who[:3] != "new" {
		t.Errorf("%s (1.0.0) leads at the end", last.who)
	}
}
