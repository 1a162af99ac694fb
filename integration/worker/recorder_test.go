package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
)

func testRecorder(t *testing.T, ttl time.Duration) (*recorder, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.jsonl")
	hw, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hw.Close() })
	w := &worker{cfg: Config{Name: "t"}, pid: 1, hist: hw, out: bufio.NewWriter(io.Discard)}
	return newRecorder(w, ttl), path
}

func readEvents(t *testing.T, path string) []history.Event {
	t.Helper()
	evs, _, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// The recorder applies dsync's rule: a hold's deadline is its session's,
// the send time + TTL − TTL/20 of the session's last open or renewal
// confirmed before the deadline in force; a session whose deadline passed
// before a confirmation is over for good.
func TestRecorderPredictsDeadlines(t *testing.T) {
	const ttl = 1000
	r, path := testRecorder(t, ttl)
	a := dsync.Claim{Key: "k", Token: 7, Session: "s1", Nonce: "a"}
	b := dsync.Claim{Key: "j", Token: 3, Session: "s1", Nonce: "b"}

	r.opened("s1", 100, 200)
	r.holding(a, 300) // takes the session's deadline
	if got := r.deadline("k", 7); got != 1050 {
		t.Fatalf("hold begun: %d, want 1050", got)
	}
	r.renewed("s1", 400, 450)
	if got := r.deadline("k", 7); got != 1350 {
		t.Fatalf("after a renewal in time: %d, want 1350", got)
	}
	r.holding(b, 500) // a second hold of the session, begun after the renewal
	if got := r.deadline("j", 3); got != 1350 {
		t.Fatalf("second hold begun: %d, want 1350", got)
	}
	r.renewed("s1", 380, 600) // sent before the last one: moves nothing
	r.renewed("s1", 700, 800) // moves both holds
	if ga, gb := r.deadline("k", 7), r.deadline("j", 3); ga != 1650 || gb != 1650 {
		t.Fatalf("after a renewal of both: %d, %d, want 1650", ga, gb)
	}
	r.ended(dsync.Claim{Key: "j", Token: 3, Session: "s1", Nonce: "other"}) // another claim of that epoch
	if got := r.deadline("j", 3); got != 1650 {
		t.Fatalf("the end of another claim of the epoch forgot the hold: %d", got)
	}
	r.ended(b)
	if got := r.deadline("j", 3); got != 0 {
		t.Fatalf("an ended hold is still known: %d", got)
	}
	r.renewed("s1", 1000, 1700) // reply after 1650: too late, the session is over
	if got := r.deadline("k", 7); got != 1650 {
		t.Fatalf("a late reply counted: %d, want 1650", got)
	}
	r.renewed("s1", 1800, 1850) // in time for its own send, but the session is over
	if got := r.deadline("k", 7); got != 1650 {
		t.Fatalf("a renewal of a retired session counted: %d, want 1650", got)
	}
	r.holding(dsync.Claim{Key: "k", Token: 9, Session: "s1", Nonce: "c"}, 1900)
	if got := r.deadline("k", 9); got != 0 {
		t.Fatalf("a hold in a retired session counted: %d", got)
	}

	r.opened("s2", 2000, 3000) // reply too late to count
	r.holding(dsync.Claim{Key: "k", Token: 10, Session: "s2", Nonce: "d"}, 3001)
	if got := r.deadline("k", 10); got != 0 {
		t.Fatalf("a hold in a session opened too late counted: %d", got)
	}

	r.opened("s3", 4000, 4100)                                                   // deadline 4950
	r.holding(dsync.Claim{Key: "k", Token: 11, Session: "s3", Nonce: "e"}, 4950) // at the deadline: too late
	if got := r.deadline("k", 11); got != 0 {
		t.Fatalf("a hold begun at its session's deadline counted: %d", got)
	}
	r.gone("s3")
	r.renewed("s3", 4200, 4300)
	r.holding(dsync.Claim{Key: "k", Token: 12, Session: "s3", Nonce: "f"}, 4400)
	if got := r.deadline("k", 12); got != 0 {
		t.Fatalf("a hold in a session the backend no longer knows counted: %d", got)
	}

	type rec struct {
		key string
		tok uint64
		t   int64
		dl  int64
	}
	var got []rec
	for _, ev := range readEvents(t, path) {
		if ev.Ev != history.EvDeadline || ev.Src != history.SrcPred {
			t.Fatalf("recorded %+v", ev)
		}
		got = append(got, rec{ev.Key, ev.Token, ev.T, ev.DL})
	}
	want := []rec{{"k", 7, 300, 1050}, {"k", 7, 450, 1350}, {"j", 3, 500, 1350}}
	// The renewal at 800 moves both holds, in either order.
	if len(got) != 5 || fmt.Sprint(got[:3]) != fmt.Sprint(want) ||
		got[3].dl != 1650 || got[4].dl != 1650 || got[3].t != 800 || got[4].t != 800 || got[3].key == got[4].key {
		t.Fatalf("recorded %v", got)
	}
}

// fakeBackend answers with the errors it is given.
type fakeBackend struct {
	claimErr, awaitErr, renewErr error
	ends                         int
}

func (f *fakeBackend) OpenSession(context.Context, time.Duration) (string, error) { return "s", nil }
func (f *fakeBackend) RenewSession(context.Context, string, time.Duration) error  { return f.renewErr }
func (f *fakeBackend) Claim(_ context.Context, key, owner, session string, _ bool) (dsync.Claim, error) {
	if f.claimErr != nil {
		return dsync.Claim{}, f.claimErr
	}
	return dsync.Claim{Key: key, Owner: owner, Session: session, Token: 1, Nonce: "n"}, nil
}
func (f *fakeBackend) Await(context.Context, dsync.Claim) error { return f.awaitErr }
func (f *fakeBackend) End(context.Context, dsync.Claim, bool) error {
	f.ends++
	return nil
}

// The recording wrapper passes every call on, and records a hold when
// Await returns nil or a try Claim returns a claim, never otherwise.
func TestRecordingBackend(t *testing.T) {
	ctx := context.Background()
	r, _ := testRecorder(t, time.Hour)
	f := &fakeBackend{}
	b := recordLocks(f, r)

	s, err := b.OpenSession(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Claim(ctx, "k", "o", s, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.deadline("k", 1) != 0 {
		t.Fatal("a queued claim counted as a hold")
	}
	f.awaitErr = errors.New("boom")
	if err := b.Await(ctx, c); !errors.Is(err, f.awaitErr) {
		t.Fatalf("Await: %v", err)
	}
	if r.deadline("k", 1) != 0 {
		t.Fatal("a failed Await counted as a hold")
	}
	f.awaitErr = nil
	if err := b.Await(ctx, c); err != nil {
		t.Fatal(err)
	}
	dl := r.deadline("k", 1)
	if dl == 0 {
		t.Fatal("a claim whose Await returned nil is not held")
	}
	if err := b.RenewSession(ctx, s, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := r.deadline("k", 1); got <= dl {
		t.Fatalf("a renewal confirmed in time did not move the deadline: %d, was %d", got, dl)
	}
	if err := b.End(ctx, c, true); err != nil || f.ends != 1 {
		t.Fatalf("End: %v, %d ends passed on", err, f.ends)
	}
	if r.deadline("k", 1) != 0 {
		t.Fatal("an ended claim is still held")
	}

	c, err = b.Claim(ctx, "k", "o", s, true)
	if err != nil || r.deadline("k", 1) == 0 {
		t.Fatalf("a try Claim that succeeded is not held (err %v)", err)
	}
	b.End(ctx, c, true)
	f.claimErr = &dsync.HeldError{Key: "k"}
	if _, err := b.Claim(ctx, "k", "o", s, true); !errors.Is(err, dsync.ErrHeld) || r.deadline("k", 1) != 0 {
		t.Fatalf("a try Claim that failed (%v) counted as a hold", err)
	}
	f.claimErr = nil

	f.renewErr = fmt.Errorf("wrapped: %w", dsync.ErrSessionGone)
	if err := b.RenewSession(ctx, s, time.Hour); !errors.Is(err, dsync.ErrSessionGone) {
		t.Fatalf("RenewSession: %v", err)
	}
	f.renewErr = nil
	c, _ = b.Claim(ctx, "k", "o", s, false)
	if err := b.Await(ctx, c); err != nil || r.deadline("k", 1) != 0 {
		t.Fatalf("a hold in a session the backend said is gone counted (err %v)", err)
	}
}
