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

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
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
	r.claimed("k", 7, "s1", "a")
	r.claimed("j", 3, "s1", "b")

	r.opened("s1", 100, 200)
	r.holding("k", 7, 300) // takes the session's deadline
	if got := r.deadline("k", 7); got != 1050 {
		t.Fatalf("hold begun: %d, want 1050", got)
	}
	r.renewed("s1", 400, 450)
	if got := r.deadline("k", 7); got != 1350 {
		t.Fatalf("after a renewal in time: %d, want 1350", got)
	}
	r.holding("j", 3, 500) // a second hold of the session, begun after the renewal
	if got := r.deadline("j", 3); got != 1350 {
		t.Fatalf("second hold begun: %d, want 1350", got)
	}
	r.renewed("s1", 380, 600) // sent before the last one: moves nothing
	r.renewed("s1", 700, 800) // moves both holds
	if ga, gb := r.deadline("k", 7), r.deadline("j", 3); ga != 1650 || gb != 1650 {
		t.Fatalf("after a renewal of both: %d, %d, want 1650", ga, gb)
	}
	r.ended("j", 3, "other") // another claim of that epoch
	if got := r.deadline("j", 3); got != 1650 {
		t.Fatalf("the end of another claim of the epoch forgot the hold: %d", got)
	}
	r.ended("j", 3, "b")
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
	r.claimed("k", 9, "s1", "c")
	r.holding("k", 9, 1900)
	if got := r.deadline("k", 9); got != 0 {
		t.Fatalf("a hold in a retired session counted: %d", got)
	}

	r.opened("s2", 2000, 3000) // reply too late to count
	r.claimed("k", 10, "s2", "d")
	r.holding("k", 10, 3001)
	if got := r.deadline("k", 10); got != 0 {
		t.Fatalf("a hold in a session opened too late counted: %d", got)
	}

	r.opened("s3", 4000, 4100) // deadline 4950
	r.claimed("k", 11, "s3", "e")
	r.holding("k", 11, 4950) // at the deadline: too late
	if got := r.deadline("k", 11); got != 0 {
		t.Fatalf("a hold begun at its session's deadline counted: %d", got)
	}
	r.gone("s3")
	r.renewed("s3", 4200, 4300)
	r.claimed("k", 12, "s3", "f")
	r.holding("k", 12, 4400)
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

// fakeStore answers renewals with what it is given, and passes the rest
// to a memory store.
type fakeStore struct {
	*memory.Store
	renewFound bool
	// renewFails makes RenewSession fail after taking renewWait.
	renewFails bool
	renewWait  time.Duration
	// latest, if set, is the latest possible server time ServerTime
	// gives.
	latest time.Time
}

func (f *fakeStore) ServerTime() driver.Interval {
	if f.latest.IsZero() {
		return f.Store.ServerTime()
	}
	return driver.Interval{Earliest: f.latest.Add(-time.Millisecond), Latest: f.latest}
}

func (f *fakeStore) RenewSession(context.Context, string, int, time.Time) (bool, error) {
	if f.renewFails {
		time.Sleep(f.renewWait) // a call that timed out took this long
		return false, errors.New("fake: no reply")
	}
	return f.renewFound, nil
}

// A renewal whose update fails and whose insert of the next generation
// then lands (the library sends both with one expiry, counting from the
// first send) moves the deadline to the first call's send time, not the
// insert's: otherwise the prediction would lie the failed call's whole
// wait past the library's deadline, and a takeover after the library's
// deadline would look early (TestClockSkew, once on a loaded machine).
func TestRenewalInTwoCallsCountsFromTheFirst(t *testing.T) {
	ctx := context.Background()
	const ttl = time.Hour
	r, _ := testRecorder(t, ttl)
	f := &fakeStore{Store: memory.New(), renewFails: true, renewWait: 50 * time.Millisecond}
	s := r.wrap(f)
	if err := s.InsertSession(ctx, driver.Session{ID: "s", ExpiresAt: time.Now().Add(ttl)}); err != nil {
		t.Fatal(err)
	}
	r.claimed("k", 1, "s", "n")
	r.holding("k", 1, history.Now())

	exp := time.Now().Add(ttl)
	if _, err := s.RenewSession(ctx, "s", 0, exp); err == nil {
		t.Fatal("the fake's update did not fail")
	}
	failed := history.Now()
	if err := s.InsertSession(ctx, driver.Session{ID: "s", Gen: 1, ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	margin := int64(ttl / 20)
	if got, after := r.deadline("k", 1), failed+int64(ttl)-margin; got >= after {
		t.Fatalf("deadline %d counts from the insert's send (at or after %d), not the update's", got, after)
	}
	if got := r.firstSent("s", exp.Add(time.Second), 7); got != 7 {
		t.Fatalf("a renewal with another expiry counts from %d, want its own send 7", got)
	}
}

// An open or renewal counts from the engine's read of the server's time
// that its expiry came from, not from its store call: the process may
// stall between the two, and the stored expiry lets others take over a
// TTL after that read. Counted from the store call, a renewal after a
// stall of 400 ms put the prediction 400 ms past that, and a takeover
// that came when the expiry allowed looked early.
func TestSendTimeIsTheServerTimeRead(t *testing.T) {
	ctx := context.Background()
	const ttl = time.Second
	ms := int64(time.Millisecond)
	r, _ := testRecorder(t, ttl)
	now := 1000 * ms
	r.now = func() int64 { return now }
	f := &fakeStore{Store: memory.New(), renewFound: true, latest: time.Unix(1000, 0)}
	s := r.wrap(f)
	margin := int64(ttl / 20)

	// Opened: the server's time read, then the insert, at once.
	exp := s.ServerTime().Latest.Add(ttl)
	if err := s.InsertSession(ctx, driver.Session{ID: "s", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	r.claimed("k", 1, "s", "n")
	r.holding("k", 1, now)
	if got, want := r.deadline("k", 1), 1000*ms+int64(ttl)-margin; got != want {
		t.Fatalf("opened: deadline %d, want %d", got, want)
	}

	// Renewed: the server's time read at 1300 ms, a read by another
	// goroutine at 1350 ms (its latest time is past the one the expiry
	// came from), a stall, and the store call at 1700 ms.
	now = 1300 * ms
	f.latest = f.latest.Add(300 * time.Millisecond)
	exp = s.ServerTime().Latest.Add(ttl)
	now = 1350 * ms
	f.latest = f.latest.Add(50 * time.Millisecond)
	s.ServerTime()
	now = 1700 * ms
	if _, err := s.RenewSession(ctx, "s", 0, exp); err != nil {
		t.Fatal(err)
	}
	if got, want := r.deadline("k", 1), 1300*ms+int64(ttl)-margin; got != want {
		t.Fatalf("renewed after a stall: deadline %d, want %d (the server-time read's), not %d (the store call's)",
			got, want, 1700*ms+int64(ttl)-margin)
	}

	// A read begun after the store call does not count, even one the
	// expiry covers; with no read the expiry covers, the store call's
	// time does.
	now = 1800 * ms
	f.latest = f.latest.Add(450 * time.Millisecond)
	exp = s.ServerTime().Latest.Add(ttl)
	if got := r.sendTime(exp, 1750*ms); got != 1350*ms {
		t.Fatalf("a renewal sent at 1750 ms counts from %d, want the read at 1350 ms", got)
	}
	if got := r.sendTime(time.Unix(999, 0).Add(ttl), now); got != now {
		t.Fatalf("a renewal whose expiry covers no read counts from %d, want its store call's %d", got, now)
	}
}

// The recording wrapper passes every call on, and records sessions,
// confirmed claims and ends; a hold counts once the worker reports it.
func TestRecordingStore(t *testing.T) {
	ctx := context.Background()
	r, _ := testRecorder(t, time.Hour)
	f := &fakeStore{Store: memory.New(), renewFound: true}
	s := r.wrap(f)

	if err := s.InsertSession(ctx, driver.Session{ID: "s", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	claim := driver.Doc{ID: driver.ClaimID("k", 1), Key: "k", Epoch: 1, Kind: driver.KindClaim, Nonce: "n", Session: "s"}
	shadow := driver.Doc{ID: driver.ShadowID("k", 1, "n"), Key: "k", Epoch: 1, Kind: driver.KindShadow, Nonce: "n", Session: "s"}
	if dup, err := s.InsertOrdered(ctx, []driver.Doc{claim, shadow}); err != nil || dup != -1 {
		t.Fatalf("InsertOrdered = %d, %v", dup, err)
	}
	if r.deadline("k", 1) != 0 {
		t.Fatal("a queued claim counted as a hold")
	}
	r.holding("k", 2, history.Now())
	if r.deadline("k", 2) != 0 {
		t.Fatal("a hold of a claim the store never confirmed counted")
	}
	r.holding("k", 1, history.Now())
	dl := r.deadline("k", 1)
	if dl == 0 {
		t.Fatal("a confirmed claim the worker holds is not held")
	}
	if _, err := s.RenewSession(ctx, "s", 0, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := r.deadline("k", 1); got <= dl {
		t.Fatalf("a renewal confirmed in time did not move the deadline: %d, was %d", got, dl)
	}
	dl = r.deadline("k", 1)
	if err := s.InsertSession(ctx, driver.Session{ID: "s", Gen: 1, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := r.deadline("k", 1); got <= dl {
		t.Fatalf("the insert of the session's next document did not count as a renewal: %d, was %d", got, dl)
	}
	end := driver.Doc{ID: driver.EndID("k", 1, "n"), Key: "k", Epoch: 1, Kind: driver.KindRelease, Nonce: "n", Session: "s"}
	if err := s.Insert(ctx, end); err != nil {
		t.Fatal(err)
	}
	if r.deadline("k", 1) != 0 {
		t.Fatal("an ended claim is still held")
	}

	f.renewFound = false
	if found, err := s.RenewSession(ctx, "s", 1, time.Now().Add(time.Hour)); found || err != nil {
		t.Fatalf("RenewSession = %v, %v", found, err)
	}
	claim.ID, claim.Epoch, claim.Nonce = driver.ClaimID("k", 2), 2, "m"
	shadow.ID, shadow.Epoch, shadow.Nonce = driver.ShadowID("k", 2, "m"), 2, "m"
	if _, err := s.InsertOrdered(ctx, []driver.Doc{claim, shadow}); err != nil {
		t.Fatal(err)
	}
	r.holding("k", 2, history.Now())
	if r.deadline("k", 2) != 0 {
		t.Fatal("a hold in a session the store said is gone counted")
	}
}

// The recording store passes on the store's runs, through itself, and
// hints' records: a worker's engine walks a queue a run at a time, as it
// would without the recorder (where the store reads runs).
func TestRecorderPassesRoles(t *testing.T) {
	r, _ := testRecorder(t, time.Second)
	s := r.wrap(memory.New())
	roles := s.Roles()
	if rs, ok := roles.Runs.(*recordingStore); !ok || rs != s {
		t.Errorf("the recording store's runs are %T, not its own", roles.Runs)
	}
	if roles.Peers == nil {
		t.Error("the recording store hides the store's peers")
	}
}

// With an outage grace, a session whose deadline passes is suspended, not
// over: a renewal confirmed past it, within its own bound (sent + TTL −
// TTL/20) and before the deadline + grace + TTL, resumes it (the library
// resumes after such a renewal if the store's record allows), and a hold
// taken back then gets its deadline; one confirmed past its own bound
// resumes nothing, and a later one still may (CI's TestElection: a
// renewal slowed by the store's restart); past that time, or without a
// grace, the session is over.
func TestRecorderResumesWithAGrace(t *testing.T) {
	const ttl = 1000
	for _, tc := range []struct {
		name       string
		grace      int64
		sent, conf int64 // the renewal after the outage
		want       int64 // the deadline of the hold taken back then (0: none)
	}{
		{"grace", 5000, 3000, 3100, 3950},
		{"no grace", 0, 3000, 3100, 0},
		{"confirmed past its own bound", 5000, 3000, 3960, 0},
		{"after one confirmed past its own bound", 5000, 4000, 4100, 4950},
		{"past the deadline + grace + TTL", 5000, 6900, 7000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := testRecorder(t, ttl)
			r.grace = tc.grace
			r.claimed("k", 7, "s1", "a")
			r.opened("s1", 0, 50) // deadline 950
			r.holding("k", 7, 100)
			if tc.sent == 4000 {
				r.renewed("s1", 3000, 3960) // resumes nothing
			}
			r.renewed("s1", tc.sent, tc.conf)
			r.forget("k", 7)
			r.holding("k", 7, tc.conf+10) // the hold taken back
			if got := r.deadline("k", 7); got != tc.want {
				t.Fatalf("deadline of the hold taken back: %d, want %d", got, tc.want)
			}
		})
	}
}

// A hold lost at its session's deadline (a suspension) keeps that
// deadline after the session resumes: its watcher may record the loss
// only then (CI's TestElection: a term's loss recorded 10 ms after its
// deadline, after the resume, read a deadline of 0, a phantom hold), and
// no later renewal moves it.
func TestRecorderLostHoldKeepsItsDeadline(t *testing.T) {
	const ttl = 1000
	r, _ := testRecorder(t, ttl)
	r.grace = 5000
	r.claimed("k", 7, "s1", "a")
	r.opened("s1", 0, 50) // deadline 950
	r.holding("k", 7, 100)
	r.renewed("s1", 3000, 3100) // resumes the session: deadline 3950
	if got := r.deadline("k", 7); got != 950 {
		t.Fatalf("deadline of the hold lost before the resume: %d, want 950", got)
	}
	r.renewed("s1", 3500, 3600)
	if got := r.deadline("k", 7); got != 950 {
		t.Fatalf("deadline of the lost hold after a later renewal: %d, want 950", got)
	}
}
