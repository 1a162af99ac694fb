package queue_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// emptiableSessions keeps the sessions, and their record of up-time, in a
// memory store of their own, so that the test can empty the sessions
// collection alone (drop); a dead marker's insert waits until release is
// closed (it lands late).
type emptiableSessions struct {
	*memory.Store
	sessions *memory.Store
	release  chan struct{}
	heldBack bool
}

func (s *emptiableSessions) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Uptime = s.sessions.Roles().Uptime
	return r
}

func (s *emptiableSessions) InsertSession(ctx context.Context, sess queue.Session) error {
	return s.sessions.InsertSession(ctx, sess)
}

func (s *emptiableSessions) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	return s.sessions.RenewSession(ctx, id, gen, expires)
}

func (s *emptiableSessions) GetSession(ctx context.Context, id string) (queue.Session, bool, error) {
	return s.sessions.GetSession(ctx, id)
}

func (s *emptiableSessions) Insert(ctx context.Context, d queue.Doc) error {
	if d.Kind == queue.KindDead {
		s.heldBack = true
		<-s.release
	}
	return s.Store.Insert(ctx, d)
}

// TestWaiterEvidenceSurvivesAnEmptying: a waiter judges a claim by the
// outage rule on evidence the store still holds. W renewed a session S1
// (stamps at 0.2 s and 0.4 s); the sessions collection is emptied at
// 0.45 s, S1's documents and record with it; O opens a session at 0.5 s
// (TTL 1 s), holds k and stops renewing (cut off alone); W waits for k in
// a session S2 renewed every 200 ms from 0.7 s. The store's record shows
// up-time from 0.7 s only: less than a TTL after O's last renewal (0.5 s)
// when W judges O's claim at 1.6 s, so O's session is not proven dead,
// and O's check, back at 1.65 s, resumes. W must not take k then.
//
// Before the fix W judged on its own sessions' stamps as it remembered
// them, S1's with them: a chain from 0.2 s, over the emptying, proved O
// dead, W held k by a dead marker (landing after O's check) beside a
// resumed O (the public-API simulation's outage seed 482: two leaders).
func TestWaiterEvidenceSurvivesAnEmptying(t *testing.T) {
	const (
		ttl   = time.Second
		grace = 30 * time.Second
	)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		docs := memory.New()
		store := &emptiableSessions{Store: docs, sessions: memory.New(), release: make(chan struct{})}
		clock := storeTimes{docs, time.Now()}
		o := graceEngine(t, store, clock, grace)
		w := graceEngine(t, store, clock, grace)
		renew := func(e *queue.Engine, s string) time.Duration {
			t.Helper()
			found, sent, err := e.RenewSession(ctx, s, ttl)
			if err != nil || !found {
				t.Fatalf("renewal of %s = %v, %v", s, found, err)
			}
			return sent
		}
		s1, _, err := w.OpenSession(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		renew(w, s1)
		time.Sleep(200 * time.Millisecond)
		renew(w, s1)
		time.Sleep(50 * time.Millisecond)
		store.sessions.Reset() // the sessions collection emptied: S1 is gone
		time.Sleep(50 * time.Millisecond)

		so, sent, err := o.OpenSession(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		lease, ok := queue.NewLease(ttl, ttl/3, sent, clock.Mono())
		if !ok {
			t.Fatal("O's lease is not usable at once")
		}
		co, err := o.Claim(ctx, "k", "O", so, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		if head, _, err := o.Walk(ctx, co); err != nil || !head {
			t.Fatalf("O's walk = %v, %v; want it holding", head, err)
		}
		s2, _, err := w.OpenSession(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		cw, err := w.Claim(ctx, "k", "W", s2, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 { // 0.7 s to 1.5 s; O renews nothing
			time.Sleep(200 * time.Millisecond)
			renew(w, s2)
		}
		time.Sleep(100 * time.Millisecond) // 1.6 s: past O's expiry

		head, v, why := walkBesideCheck(t, w, o, cw, co, so, lease, clock,
			func() {}, func() time.Duration { return renew(o, so) }, store.release)
		t.Logf("W's walk: holds %v (its dead marker held back: %v); O's check: %v (%v)", head, store.heldBack, v, why)
		if head && v == queue.ResumeResumed {
			t.Fatalf("W holds k by a dead marker on O's claim #%d, and O's check resumed that claim: two holders", co.Epoch)
		}
	})
}
