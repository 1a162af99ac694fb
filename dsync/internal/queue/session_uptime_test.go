package queue_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// storeTimes is the engine's clock on a memory store: the store's time,
// and the local monotonic time since start (fake, in a synctest bubble).
type storeTimes struct {
	s     *memory.Store
	start time.Time
}

func (c storeTimes) ServerNow() queue.Interval { return c.s.ServerTime() }
func (c storeTimes) Mono() time.Duration       { return time.Since(c.start) }

// noUptime is a memory store that keeps no record of up-time.
type noUptime struct{ *memory.Store }

func (s noUptime) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Uptime = nil
	return r
}

func graceEngine(t *testing.T, store queue.Store, clock queue.Times, grace time.Duration, opts ...func(*queue.Config)) *queue.Engine {
	t.Helper()
	cfg := queue.DefaultConfig()
	cfg.OutageGrace = grace
	for _, o := range opts {
		o(&cfg)
	}
	e, err := queue.New(store, clock, cfg)
	if err != nil {
		t.Fatalf("New with OutageGrace %v: %v", grace, err)
	}
	return e
}

// TestOutageGraceConfig: a grace is zero, or positive up to MaxGrace in
// whole milliseconds.
func TestOutageGraceConfig(t *testing.T) {
	for _, g := range []time.Duration{-time.Millisecond, queue.MaxGrace + time.Millisecond, 1500 * time.Microsecond} {
		cfg := queue.DefaultConfig()
		cfg.OutageGrace = g
		if _, err := queue.New(memory.New(), fixedClock{}, cfg); err == nil || !strings.Contains(err.Error(), "OutageGrace") {
			t.Errorf("New with OutageGrace %v = %v; want an error naming OutageGrace", g, err)
		}
	}
	graceEngine(t, memory.New(), fixedClock{}, queue.MaxGrace)
}

// TestClaimsCarryGrace: an engine's claims record its outage grace, on a
// store that keeps a record of up-time; none (zero) without a grace, or
// on a store without the record.
func TestClaimsCarryGrace(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		store queue.Store
		grace time.Duration
		want  time.Duration
	}{
		{"grace", memory.New(), 30 * time.Second, 30 * time.Second},
		{"no grace", memory.New(), 0, 0},
		{"a store without the record", noUptime{memory.New()}, 30 * time.Second, 0},
	} {
		e := graceEngine(t, c.store, fixedClock{}, c.grace)
		sess, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := e.Claim(ctx, "k", "o", sess, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		d, found, err := e.ReadClaim(ctx, "k", cl.Epoch)
		if err != nil || !found || d.Grace != c.want || e.Grace() != c.want {
			t.Errorf("%s: claim %+v (found %v, %v), engine's grace %v; want grace %v", c.name, d, found, err, e.Grace(), c.want)
		}
	}
}

// TestSessionKeepsStamps: with a grace, a session's renewals send the
// stamps its earlier renewals got back, merged under TTL/2, and keep the
// new one: the record the engine keeps is, merged, what the store holds;
// each read of the store's record holds every stamp of the reads before
// it; a gap longer than TTL/2 stays a gap. A renewal whose reply is lost
// moves to the next generation, whose record starts from the last span
// of the record so far while the generation before keeps the stamps it
// had: the earlier spans are not sent again. Without a grace, renewals write no record.
func TestSessionKeepsStamps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		var loseNext bool
		store := mem.Intercept(func(ctx context.Context, c memory.Call, serve func() error) error {
			if c.Op == "RenewSessionUp" && loseNext {
				loseNext = false
				if err := serve(); err != nil {
					return err
				}
				return errors.New("reply lost")
			}
			return nil
		})
		e := graceEngine(t, store, storeTimes{mem, time.Now()}, 30*time.Second)
		const ttl = 2 * time.Second
		sess, _, err := e.OpenSession(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		u := mem.Roles().Uptime
		var prev []queue.UpSpan
		exact := true // the engine knows every stamp the store holds
		renewAfter := func(d time.Duration, unmarked bool) {
			t.Helper()
			time.Sleep(d)
			if found, _, err := e.RenewSession(ctx, sess, ttl); err != nil || !found {
				t.Fatalf("RenewSession = %v, %v", found, err)
			}
			rec, err := u.ReadUptime(ctx, time.Time{})
			if err != nil || rec.Unmarked != unmarked {
				t.Fatalf("ReadUptime = %+v, %v; want Unmarked %v", rec, err, unmarked)
			}
			stored, err := queue.Chains(rec.Spans, ttl/2)
			if err != nil {
				t.Fatal(err)
			}
			own := e.OwnUptime(sess)
			if exact && !slices.Equal(stored, own) {
				t.Errorf("the store holds %v, merged; the engine keeps %v", stored, own)
			}
			for _, o := range own {
				if !covered(stored, o) {
					t.Errorf("[%v, %v], in the engine's record, is not in the store's: %v", o.From, o.To, stored)
				}
			}
			for _, p := range prev {
				if !covered(stored, p) {
					t.Errorf("[%v, %v], in the store's record before, is not in it now: %v", p.From, p.To, stored)
				}
			}
			prev = stored
		}
		t0 := mem.ServerTime().Latest
		renewAfter(500*time.Millisecond, false)
		renewAfter(500*time.Millisecond, false)
		renewAfter(1500*time.Millisecond, false) // a gap above TTL/2, below the TTL
		renewAfter(500*time.Millisecond, false)
		// (No stamp at t0: the open inserts its document marked, with no
		// record, and the first stamp is its first renewal's.)
		want := []queue.UpSpan{{From: t0.Add(500 * time.Millisecond), To: t0.Add(time.Second)}, {From: t0.Add(2500 * time.Millisecond), To: t0.Add(3 * time.Second)}}
		if own := e.OwnUptime(sess); !slices.Equal(own, want) {
			t.Errorf("OwnUptime = %v, want %v", own, want)
		}

		// The reply of the next renewal is lost: its stamp is in the store
		// (generation 0's seen), not in the engine's record; the renewal
		// goes on to generation 1, inserted marked (so never unmarked),
		// whose first stamp is the next renewal's.
		loseNext, exact = true, false
		renewAfter(500*time.Millisecond, false)
		renewAfter(500*time.Millisecond, false)
		if s, found, err := mem.GetSession(ctx, sess); err != nil || !found || s.Gen != 1 {
			t.Fatalf("GetSession = %+v, %v, %v; want generation 1 renewed last", s, found, err)
		}
		// The store's record, merged, runs from 2.5s to 4s (a gap of
		// exactly TTL/2 does not break): generation 0 holds it to 3.5s,
		// and generation 1 carried its last span, [2.5s, 3s], which its
		// first stamp, at 4s, merged into; not [0.5s, 1s].
		if own, want := e.OwnUptime(sess), []queue.UpSpan{{From: t0.Add(2500 * time.Millisecond), To: t0.Add(4 * time.Second)}}; !slices.Equal(own, want) {
			t.Errorf("OwnUptime after a lost reply = %v, want %v: generation 0's last span, and generation 1's stamps", own, want)
		}
		renewAfter(500*time.Millisecond, false)
		rec, err := u.ReadUptime(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if n := slices.Index(rec.Spans, want[0]); n < 0 || slices.Index(rec.Spans[n+1:], want[0]) >= 0 {
			t.Errorf("the store holds [0.5s, 1s] %d times: want once, in generation 0 (generation 1 carries the last span only): %v", count(rec.Spans, want[0]), rec.Spans)
		}
		if stored, _ := queue.Chains(rec.Spans, ttl/2); !slices.Equal(stored, []queue.UpSpan{want[0], {From: t0.Add(2500 * time.Millisecond), To: t0.Add(4500 * time.Millisecond)}}) {
			t.Errorf("the store's record, merged, is %v", stored)
		}
	})

	// Without a grace: no record.
	ctx := context.Background()
	mem := memory.New()
	e := graceEngine(t, mem, storeTimes{mem, time.Now()}, 0)
	sess, _, err := e.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if found, _, err := e.RenewSession(ctx, sess, time.Minute); err != nil || !found {
		t.Fatalf("RenewSession = %v, %v", found, err)
	}
	if rec, err := mem.Roles().Uptime.ReadUptime(ctx, time.Time{}); err != nil || !rec.Unmarked || len(rec.Spans) != 0 || e.OwnUptime(sess) != nil {
		t.Errorf("without a grace: the store's record %+v (%v), the engine's %v; want none, the session unmarked", rec, err, e.OwnUptime(sess))
	}
}

// count returns how many of spans are sp.
func count(spans []queue.UpSpan, sp queue.UpSpan) int {
	n := 0
	for _, x := range spans {
		if x == sp {
			n++
		}
	}
	return n
}

// covered reports whether span p lies within one of chains.
func covered(chains []queue.UpSpan, p queue.UpSpan) bool {
	for _, c := range chains {
		if !p.From.Before(c.From) && !p.To.After(c.To) {
			return true
		}
	}
	return false
}
