package leader_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// versioned is the options of a candidate of version v under the
// version rule.
func versioned(v string) []leader.Option {
	return []leader.Option{leader.WithVersion(v), leader.WithVersionRule(nil)}
}

// awaitMember waits until e's status is listed live, at most a minute.
func awaitMember(e *leader.Election) bool {
	for range 6000 {
		ms, err := e.Members(context.Background())
		if err == nil && slices.ContainsFunc(ms, func(m leader.Member) bool { return m.ID == e.ID() }) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// rollingUpgrade runs five candidates of version 1.0.0, then upgrades
// them one at a time to 2.0.0 in surge order: start the new one, wait
// until it is a member, close the old one, let three heartbeats pass. It
// returns what broke the promises: terms that overlap or tokens that do
// not rise, more than one change of leader in a step, a term of 1.0.0
// begun after one of 2.0.0, a last leader not of 2.0.0.
func rollingUpgrade(t *testing.T) []string {
	s, stop := newSteered(t)
	defer stop()
	for i := range 5 {
		s.start(fmt.Sprintf("old%d", i), versioned("1.0.0")...)
	}
	var v []string
	for i := range 5 {
		before, _ := s.l.snapshot()
		e := s.start(fmt.Sprintf("new%d", i), versioned("2.0.0")...)
		if !awaitMember(e) {
			return append(v, fmt.Sprintf("new%d is no member", i))
		}
		old := fmt.Sprintf("old%d", i)
		if err := s.es[old].Close(); err != nil {
			v = append(v, fmt.Sprintf("close %s: %v", old, err))
		}
		delete(s.es, old)
		time.Sleep(3 * time.Second)
		after, _ := s.l.snapshot()
		if n := len(after) - len(before); n > 1 {
			v = append(v, fmt.Sprintf("step %d: %d changes of leader", i, n))
		}
	}
	terms, tv := s.l.snapshot()
	v = append(v, tv...)
	newer := false
	for _, tm := range terms {
		isNew := strings.HasPrefix(tm.who, "new")
		if newer && !isNew {
			v = append(v, fmt.Sprintf("%s (1.0.0) led term %d after a 2.0.0 term", tm.who, tm.token))
		}
		newer = newer || isNew
	}
	if last := terms[len(terms)-1]; !strings.HasPrefix(last.who, "new") || last.cause != nil {
		v = append(v, fmt.Sprintf("last term %+v, want a 2.0.0 one that lasts", last))
	}
	t.Logf("terms: %+v", terms)
	return v
}

// TestRollingUpgrade: leadership moves to the new version once, and
// never back.
func TestRollingUpgrade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, v := range rollingUpgrade(t) {
			t.Error(v)
		}
	})
}

// gateScenario: old a leads, old o waits behind it, and new n starts (its
// status written, its claim behind o's); a resigns before o's next
// heartbeat, so o's claim comes to hold while n is live. o must begin no
// term: n leads next.
func gateScenario(t *testing.T) []string {
	s, stop := newSteered(t)
	defer stop()
	a := s.start("a", versioned("1.0.0")...)
	s.start("o", versioned("1.0.0")...)
	s.start("n", versioned("2.0.0")...)
	if err := a.Resign(context.Background()); err != nil {
		return []string{fmt.Sprintf("Resign = %v", err)}
	}
	if !s.awaitTerms(2, time.Minute) {
		return []string{"nobody led after a resigned"}
	}
	terms, v := s.l.snapshot()
	if terms[1].who != "n" {
		v = append(v, fmt.Sprintf("%s led after a, while n (2.0.0) was live; want n", terms[1].who))
	}
	return v
}

// TestVersionGate: a candidate whose claim comes to hold while a newer
// member is live begins no term, and the newer one leads.
func TestVersionGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, v := range gateScenario(t) {
			t.Error(v)
		}
	})
}

// TestIneligibleRequeues: an old candidate that withdrew for a newer one
// queues again, and leads, once the newer one is gone.
func TestIneligibleRequeues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, stop := newSteered(t)
		defer stop()
		s.start("o", versioned("1.0.0")...)
		n := s.start("n", versioned("2.0.0")...)
		if !s.awaitTerms(2, time.Minute) {
			t.Fatal("n did not lead")
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		delete(s.es, "n")
		if !s.awaitTerms(3, time.Minute) {
			t.Fatal("o did not lead again once n was gone")
		}
		terms, v := s.l.snapshot()
		for _, x := range v {
			t.Error(x)
		}
		if got := []string{terms[0].who, terms[1].who, terms[2].who}; !slices.Equal(got, []string{"o", "n", "o"}) {
			t.Errorf("leaders %v, want o, n, o", got)
		}
		if terms[0].cause != leader.ErrPreempted {
			t.Errorf("o's first term ended by %v, want ErrPreempted", terms[0].cause)
		}
	})
}

// TestUpgradeStopFirst: a step that stops the old leader before it
// starts the new candidate changes leadership twice: another old
// candidate leads, then gives way to the new one (as the docs say).
func TestUpgradeStopFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, stop := newSteered(t)
		defer stop()
		s.start("old0", versioned("1.0.0")...)
		s.start("old1", versioned("1.0.0")...)
		if err := s.es["old0"].Close(); err != nil {
			t.Fatal(err)
		}
		delete(s.es, "old0")
		// A stop-first step: the old leader is gone, and another old
		// candidate leads before the new one starts.
		if !s.awaitTerms(2, time.Minute) {
			t.Fatal("leadership did not reach old1")
		}
		s.start("new0", versioned("2.0.0")...)
		if !s.awaitTerms(3, time.Minute) {
			t.Fatal("leadership did not reach new0")
		}
		terms, v := s.l.snapshot()
		for _, x := range v {
			t.Error(x)
		}
		got := []string{terms[0].who, terms[1].who, terms[2].who}
		if !slices.Equal(got, []string{"old0", "old1", "new0"}) || terms[1].cause != leader.ErrPreempted {
			t.Errorf("leaders %v (old1's term ended by %v), want old0, old1, new0, old1 preempted", got, terms[1].cause)
		}
	})
}

// TestTransferToOlderWaits: under the version rule, a transfer to a
// candidate older than a live member waits until its ctx ends (that
// candidate does not queue), and the leader keeps leading.
func TestTransferToOlderWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, stop := newSteered(t)
		defer stop()
		n := s.start("n", versioned("2.0.0")...)
		o := s.start("o", versioned("1.0.0")...)
		time.Sleep(2 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Transfer(ctx, o.ID()); err != context.DeadlineExceeded {
			t.Fatalf("Transfer to an older candidate = %v, want context.DeadlineExceeded", err)
		}
		if !n.IsLeader() {
			t.Fatal("n stopped leading")
		}
	})
}

// unreadMembers fails every read of the members while down is set; the
// candidate's own status writes still land.
type unreadMembers struct {
	leader.MemberStore
	down atomic.Bool
}

func (u *unreadMembers) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	if u.down.Load() {
		return nil, errCut
	}
	return u.MemberStore.Members(ctx, election, maxAge)
}

// startUnread starts candidate who, as start does, on a member store
// whose reads fail while the returned unreadMembers' down is set.
func (s *steered) startUnread(who string, opts ...leader.Option) (*leader.Election, *unreadMembers) {
	p := s.w.process(s.t)
	reads := &unreadMembers{MemberStore: p.members}
	p.members = reads
	e := newElection(s.t, p, opts...)
	s.es[who] = e
	s.wg.Go(func() { s.l.run(s.ctx, e, who) })
	synctest.Wait()
	return e, reads
}

// TestVersionGateUnreadable: under the version rule, a candidate whose
// claim comes to hold while its member store does not answer begins no
// term (it cannot tell whether a newer version is live): it releases
// the lease, and x, which campaigns again, leads on. Once the store
// answers, and x is gone, it leads.
func TestVersionGateUnreadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, stop := newSteered(t)
		defer stop()
		x := s.start("x", versioned("1.0.0")...)
		o, reads := s.startUnread("o", versioned("1.0.0")...)
		if !awaitMember(o) {
			t.Fatal("o is no member")
		}
		time.Sleep(2 * time.Second) // o queued behind x
		reads.down.Store(true)
		if err := x.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // ten heartbeats of o's
		terms, _ := s.l.snapshot()
		for _, tm := range terms {
			if tm.who == "o" {
				t.Fatalf("o led term %d while it could not read the members", tm.token)
			}
		}
		restored := time.Now()
		reads.down.Store(false)
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		delete(s.es, "x")
		if !s.awaitTerms(len(terms)+1, time.Minute) {
			t.Fatal("o did not lead once its store answered")
		}
		terms, v := s.l.snapshot()
		for _, x := range v {
			t.Error(x)
		}
		if last := terms[len(terms)-1]; last.who != "o" || last.began.Before(restored) {
			t.Errorf("last term %+v, want o's, begun after %v", last, restored)
		}
	})
}
