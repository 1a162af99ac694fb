package lease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// testHold is a hold of key, for a Keeper of its own.
type testHold struct {
	key  string
	mu   sync.Mutex
	lost bool
}

func (h *testHold) Key() string                   { return h.key }
func (h *testHold) Ref() queue.Ref                { return queue.Ref{Key: h.key} }
func (h *testHold) Start(deadline time.Time) bool { return time.Now().Before(deadline) }
func (h *testHold) TellLost()                     {}

func (h *testHold) MarkLost(error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.lost
	h.lost = true
	return !was
}

// testClock is the time package's clock (synctest's, in a bubble).
type testClock struct{}

func (testClock) Now() time.Time { return time.Now() }
func (testClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// newTestKeeper returns a Keeper of ttl over a store that always answers,
// where the segments of the keys in covered are covered for an hour from
// now and every other key's coverage is unknown; wait waits for its
// goroutines.
func newTestKeeper(t *testing.T, ttl time.Duration, covered ...string) (k *Keeper[*testHold], wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	p := Params{TTL: ttl, Clock: testClock{}}
	if err := p.Settle(); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	env := testEnv(&wg, errors.New("closed"))
	env.CoverEnd = func(key string) time.Time {
		for _, c := range covered {
			if c == key {
				return until
			}
		}
		return time.Time{}
	}
	return New(p, env), wg.Wait
}

// testEnv is the Env of a store that always answers, where no key's
// coverage is known; its goroutines run in wg, and closed is its Closed
// error.
func testEnv(wg *sync.WaitGroup, closed error) Env[*testHold] {
	return Env[*testHold]{
		Open:          func(context.Context, time.Duration) (string, error) { return "s", nil },
		Renew:         func(context.Context, string, time.Duration) error { return nil },
		CoverEnd:      func(string) time.Time { return time.Time{} },
		Refresh:       func(context.Context, []string) ([]string, error) { return nil, nil },
		Span:          func() time.Duration { return time.Hour },
		ServerLatest:  time.Now,
		Go:            func(f func()) { wg.Go(f) },
		Logger:        slog.New(slog.DiscardHandler),
		Renewed:       func(time.Duration, time.Duration) {},
		Outcome:       func(bool) {},
		RenewFailed:   func([]*testHold, error, slog.Level) {},
		RefreshFailed: func([]*testHold, error) {},
		Errors: Errors{Lost: errors.New("lost"), Closed: closed, Revoked: errors.New("revoked"),
			Gone: errors.New("gone"), Ended: func(error) bool { return false }},
	}
}

// TestCapHeedsAKeyWithNoCoverage: a session holding two keys, one of
// which this process no longer knows the coverage of (its knowledge was
// dropped: coverLocked's 0), is capped at once: no renewal may extend its
// deadline. capLocked took a 0 for "no key seen yet", so when the key of
// unknown coverage came first in the map's order, the other key's
// coverage replaced it and renewals extended the lease past anything the
// first key's segment was known to cover.
func TestCapHeedsAKeyWithNoCoverage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, wait := newTestKeeper(t, 2*time.Second, "k")
		defer wait()
		defer k.Close(errors.New("closed"))
		s, err := k.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !k.Join(&testHold{key: "k"}, s) {
			t.Fatal("a hold of a covered key did not join a live session")
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.coverLocked("k") <= s.lease.Deadline() {
			t.Fatal("the held key's coverage does not reach past the lease's deadline: the test shows nothing")
		}
		unknown := &testHold{key: "knowledge-dropped"}
		k.holds[unknown] = s
		defer delete(k.holds, unknown)
		// Map order decides which hold capLocked sees first: try enough
		// times that both orders come.
		for i := range 64 {
			k.capLocked(s)
			d := s.lease.Deadline()
			at := d - time.Millisecond
			if ev := s.lease.Confirm(at, at); ev != queue.LeaseKept {
				t.Fatalf("try %d: a renewal of a session holding a key of unknown coverage moved its deadline from %v to %v (lease event %d), want it kept", i, d, s.lease.Deadline(), ev)
			}
		}
	})
}

// TestLapsedHoldToldAfterTheMargin: a refresh that finds a held key's
// segment lapsed loses that hold at once, and tells Env.Lapsed of it (so
// that its claim is ended: its session lives on) a margin later, not
// before: the hold's work is told to stop first. A hold of a key still
// covered is neither lost nor told.
func TestLapsedHoldToldAfterTheMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		p := Params{TTL: 3 * time.Second, Clock: testClock{}}
		if err := p.Settle(); err != nil {
			t.Fatal(err)
		}
		until := time.Now().Add(time.Hour)
		env := testEnv(&wg, errors.New("closed"))
		env.CoverEnd = func(string) time.Time { return until }
		env.Refresh = func(context.Context, []string) ([]string, error) { return []string{"lapses"}, nil }
		var mu sync.Mutex
		var told []string
		env.Lapsed = func(h *testHold) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, h.key)
		}
		k := New(p, env)
		defer wg.Wait()
		defer k.Close(errors.New("closed"))
		s, err := k.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		lapses, stays := &testHold{key: "lapses"}, &testHold{key: "stays"}
		if !k.Join(lapses, s) || !k.Join(stays, s) {
			t.Fatal("a hold of a covered key did not join a live session")
		}
		k.refresh(context.Background(), s)
		if !lapses.lost || stays.lost {
			t.Fatalf("after the refresh: lost %v (lapsed key), %v (covered key); want true, false", lapses.lost, stays.lost)
		}
		time.Sleep(p.Margin - time.Millisecond)
		mu.Lock()
		early := len(told)
		mu.Unlock()
		if early != 0 {
			t.Fatalf("Lapsed told %v before the margin (%v)", told, p.Margin)
		}
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if len(told) != 1 || told[0] != "lapses" {
			t.Fatalf("Lapsed told %v a margin after the loss; want [lapses]", told)
		}
	})
}
