package hint

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// recorder is a driver.FeedHandler that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	events []driver.Event
	downs  []bool  // each Down's off
	errs   []error // and its error
	lives  int
	got    chan struct{} // notified on each event
}

func newRecorder() *recorder { return &recorder{got: make(chan struct{}, 1024)} }

func (r *recorder) Live(uint64) { r.mu.Lock(); r.lives++; r.mu.Unlock() }
func (r *recorder) Down(err error, off bool) {
	r.mu.Lock()
	r.downs = append(r.downs, off)
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}
func (r *recorder) Event(e driver.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	r.got <- struct{}{}
}

// waitFor waits until an event e with match(e) was received, and returns
// how many of the events received match.
func (r *recorder) waitFor(t *testing.T, match func(driver.Event) bool) int {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		n := 0
		for _, e := range r.events {
			if match(e) {
				n++
			}
		}
		r.mu.Unlock()
		if n > 0 {
			return n
		}
		select {
		case <-r.got:
		case <-timeout:
			t.Fatal("the event never came")
		}
	}
}

func (r *recorder) count(match func(driver.Event) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if match(e) {
			n++
		}
	}
	return n
}

func about(key string) func(driver.Event) bool {
	return func(e driver.Event) bool { return e.Key == key }
}

// follower is a Feed that follows, and what it received.
type follower struct {
	f    *Feed
	rec  *recorder
	stop func()
}

// follow starts a Feed on store (inner: the store's own feed, or nil) on
// a loopback port, and waits until it has read the hint key and recorded
// itself.
func follow(t *testing.T, store driver.Store, inner driver.Feed) follower {
	t.Helper()
	return followWith(t, store, inner, nil)
}

// followWith is follow, with set (if not nil) called on the Feed before
// it follows.
func followWith(t *testing.T, store driver.Store, inner driver.Feed, set func(*Feed)) follower {
	t.Helper()
	f, err := New(store, inner, Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(f)
	}
	rec := newRecorder()
	stop := f.Follow(rec)
	t.Cleanup(stop)
	waitUntil(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.key != nil })
	return follower{f, rec, stop}
}

// knows waits until a knows b (by a's record read or b's hello).
func knows(t *testing.T, a, b follower) {
	t.Helper()
	waitUntil(t, func() bool {
		a.f.mu.Lock()
		defer a.f.mu.Unlock()
		_, ok := a.f.peersByID[b.f.id]
		return ok
	})
}

// waitUntil polls cond: a condition another goroutine makes true.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHintsGoWhereTheyAreUsed: an announcement goes to every process
// recorded; an end only to those that announced they wait for its key.
func TestHintsGoWhereTheyAreUsed(t *testing.T) {
	store := memory.New()
	owner, waiter, other := follow(t, store, nil), follow(t, store, nil), follow(t, store, nil)
	for _, a := range []follower{owner, waiter, other} {
		for _, b := range []follower{owner, waiter, other} {
			if a.f != b.f {
				knows(t, a, b)
			}
		}
	}
	ctx := context.Background()
	until := store.ServerTime().Latest.Add(time.Hour)
	if err := waiter.f.Publish(ctx, driver.Event{Kind: driver.Waiting, Key: "k", Epoch: 4, Until: until, Proc: "w"}); err != nil {
		t.Fatal(err)
	}
	isWaiting := func(e driver.Event) bool {
		return e.Kind == driver.Waiting && e.Key == "k" && e.Epoch == 4 && e.Proc == "w" && e.Until.Equal(until)
	}
	owner.rec.waitFor(t, isWaiting)
	other.rec.waitFor(t, isWaiting)
	if err := owner.f.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k", Epoch: 4, Proc: "o"}); err != nil {
		t.Fatal(err)
	}
	waiter.rec.waitFor(t, func(e driver.Event) bool { return e.Kind == driver.Ended && e.Key == "k" && e.Epoch == 4 })
	// A marker after it, to the other process: hints between two
	// processes arrive in order on loopback, so once the marker is in,
	// the end would have been too.
	if err := owner.f.Publish(ctx, driver.Event{Kind: driver.Waiting, Key: "marker", Epoch: 1, Until: until, Proc: "o"}); err != nil {
		t.Fatal(err)
	}
	other.rec.waitFor(t, about("marker"))
	if n := other.rec.count(func(e driver.Event) bool { return e.Kind == driver.Ended }); n != 0 {
		t.Errorf("a process that waits for nothing of the key received %d ends", n)
	}
	// The end woke the waiter that announced it waits for it, and no one
	// else: Stats.Woke counts it once.
	if w, o := waiter.f.Stats(), owner.f.Stats(); w.Woke != 1 || o.Woke != 0 || w.Taken == 0 || o.Sent == 0 {
		t.Errorf("stats: waiter %+v, owner %+v; want the waiter woken once", w, o)
	}
}

// TestHintsEndToAllWhenNoneAnnounced: an end of a key nobody announced
// (the owner's store feed saw the announcement, or it was lost) goes to
// every process.
func TestHintsEndToAllWhenNoneAnnounced(t *testing.T) {
	store := memory.New()
	a, b := follow(t, store, nil), follow(t, store, nil)
	knows(t, a, b)
	if err := a.f.Publish(context.Background(), driver.Event{Kind: driver.Ended, Key: "k", Epoch: 2, Proc: "a"}); err != nil {
		t.Fatal(err)
	}
	b.rec.waitFor(t, func(e driver.Event) bool { return e.Kind == driver.Ended && e.Key == "k" })
}

// sender sends raw datagrams to a Feed, as anyone on the network can.
func sender(t *testing.T, to *Feed) func(b []byte) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	addr, err := net.ResolveUDPAddr("udp", to.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return func(b []byte) {
		if _, err := conn.WriteTo(b, addr); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHintsForgedLateAndReplayedAreDropped: a hint under another key, one
// sent too long ago and one taken already are never handed on; a valid
// one sent after them is (so they had arrived).
func TestHintsForgedLateAndReplayedAreDropped(t *testing.T) {
	store := memory.New()
	a := follow(t, store, nil)
	key, err := store.Roles().Peers.HintKey(context.Background(), nil)
	if err != nil || len(key) != 32 {
		t.Fatalf("the hint key: %x, %v", key, err)
	}
	send := sender(t, a.f)
	now := store.ServerTime().Latest
	hint := func(k string, seq uint64, sent time.Time, under []byte) []byte {
		b, err := encode(msg{kind: kindEnded, seq: seq, sent: sent, epoch: 1, from: "attacker", addr: "127.0.0.1:1", proc: "x", key: k, to: a.f.id}, under)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	send(hint("forged", 1, now, []byte("not the store's key")))
	send(hint("late", 2, now.Add(-time.Minute), key))
	valid := hint("replayed", 3, now, key)
	send(valid)
	send(valid)
	send(hint("marker", 4, now, key))
	a.rec.waitFor(t, about("marker"))
	for k, want := range map[string]int{"forged": 0, "late": 0, "replayed": 1} {
		if n := a.rec.count(about(k)); n != want {
			t.Errorf("%s hints handed on: %d, want %d", k, n, want)
		}
	}
	// Counted as they were dropped: the forged one rejected, the late one
	// and the replay refused (hellos of no other process are in this
	// store, so the counts are exact).
	if s := a.f.Stats(); s.Received != 5 || s.Rejected != 1 || s.Refused != 2 || s.Taken != 2 || s.Woke != 0 {
		t.Errorf("stats %+v; want 5 received, 1 rejected, 2 refused, 2 taken", s)
	}
}

// innerFeed is a store feed a test drives by hand.
type innerFeed struct {
	mu        sync.Mutex
	h         driver.FeedHandler
	published []driver.Event
}

func (i *innerFeed) Follow(h driver.FeedHandler) func() {
	i.mu.Lock()
	i.h = h
	i.mu.Unlock()
	return func() {}
}
func (i *innerFeed) Publish(_ context.Context, e driver.Event) error {
	i.mu.Lock()
	i.published = append(i.published, e)
	i.mu.Unlock()
	return nil
}
func (i *innerFeed) Replay() time.Duration { return 7 * time.Second }
func (i *innerFeed) handler() driver.FeedHandler {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.h
}

// TestHintsComposeWithTheStoresFeed: while no hint has reached this
// process, the store's feed's events and state pass through; events go
// through it only while it is live; and a store feed that is off for
// good is passed on as down, not off, since hints still carry events.
func TestHintsComposeWithTheStoresFeed(t *testing.T) {
	store := memory.New()
	inner := &innerFeed{}
	a := follow(t, store, inner)
	if a.f.Replay() != 7*time.Second {
		t.Errorf("Replay = %v, want the store feed's", a.f.Replay())
	}
	ctx := context.Background()
	h := inner.handler()
	// Not live yet: a hint only (to nobody: no other process).
	_ = a.f.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k1", Epoch: 1, Proc: "a"})
	h.Live(1)
	_ = a.f.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k2", Epoch: 1, Proc: "a"})
	h.Event(driver.Event{Kind: driver.Ended, Key: "from-store", Epoch: 1, Proc: "z"})
	a.rec.waitFor(t, about("from-store"))
	h.Down(nil, true)
	_ = a.f.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k3", Epoch: 1, Proc: "a"})
	inner.mu.Lock()
	published := inner.published
	inner.mu.Unlock()
	if len(published) != 1 || published[0].Key != "k2" {
		t.Errorf("the store's feed was sent %v, want only k2 (sent while it was live)", published)
	}
	a.rec.mu.Lock()
	defer a.rec.mu.Unlock()
	if a.rec.lives != 1 || len(a.rec.downs) != 1 || a.rec.downs[0] {
		t.Errorf("handler told %d Live, Downs %v; want 1 Live and one Down, not off", a.rec.lives, a.rec.downs)
	}
	if a.f.Paused() {
		t.Error("paused with no hint taken")
	}
}

// pausingInner is an innerFeed that can be paused (driver.FeedPauser),
// on a store whose Roles say so (pausing).
type pausingInner struct {
	innerFeed
	pauses []bool
}

// pausing is a store whose feed's pauser is p.
type pausing struct {
	driver.Store
	p *pausingInner
}

func (s pausing) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Feed, r.FeedPause = s.p, s.p
	return r
}

func (p *pausingInner) Pause(paused bool) {
	p.mu.Lock()
	p.pauses = append(p.pauses, paused)
	p.mu.Unlock()
}

// TestStoresFeedPausedWhileHintsReach: once a hint from another process
// reaches it, a process stops reading the store's feed (its handler is
// told the feed is down, paused; the store's feed is paused; what it
// still delivers is dropped; events go by hints only), and reads it again
// once no hint came for reachedFor (the store's feed says Live again).
func TestStoresFeedPausedWhileHintsReach(t *testing.T) {
	store := memory.New()
	inner := &pausingInner{}
	a := followWith(t, pausing{store, inner}, inner, func(f *Feed) { f.reachedFor, f.reachCheck = 300*time.Millisecond, 20*time.Millisecond })
	h := inner.handler()
	h.Live(1)
	b := follow(t, store, nil) // says hello to a
	// Paused turns true before the handler is told (setPaused): wait for
	// the Down, not for the flag.
	waitUntil(t, func() bool {
		a.rec.mu.Lock()
		defer a.rec.mu.Unlock()
		return a.f.Paused() && len(a.rec.errs) > 0
	})
	a.rec.mu.Lock()
	errs := slices.Clone(a.rec.errs)
	a.rec.mu.Unlock()
	if len(errs) != 1 || !errors.Is(errs[0], ErrStoreFeedPaused) {
		t.Fatalf("handler told Downs %v, want one, paused", errs)
	}
	h.Event(driver.Event{Kind: driver.Ended, Key: "from-store", Epoch: 1, Proc: "z"})
	knows(t, a, b)
	_ = a.f.Publish(context.Background(), driver.Event{Kind: driver.Ended, Key: "k", Epoch: 1, Proc: "a"})
	b.rec.waitFor(t, about("k"))
	inner.mu.Lock()
	published := len(inner.published)
	inner.mu.Unlock()
	if published != 0 {
		t.Errorf("the paused store's feed was sent %d events", published)
	}
	if n := a.rec.count(about("from-store")); n != 0 {
		t.Errorf("an event of the paused store's feed was handed on")
	}
	// b goes: no hint comes any more, and the feed is resumed.
	b.stop()
	// Paused turns false before the store's feed is told (setPaused):
	// wait for its second Pause, not for the flag.
	waitUntil(t, func() bool {
		inner.mu.Lock()
		defer inner.mu.Unlock()
		return !a.f.Paused() && len(inner.pauses) >= 2
	})
	inner.mu.Lock()
	pauses := slices.Clone(inner.pauses)
	inner.mu.Unlock()
	if !slices.Equal(pauses, []bool{true, false}) {
		t.Errorf("store's feed told Pause %v, want true then false", pauses)
	}
	h.Live(2)
	a.rec.mu.Lock()
	lives := a.rec.lives
	a.rec.mu.Unlock()
	if lives != 2 {
		t.Errorf("handler told %d Live, want 2 (before the pause, and as the feed came back)", lives)
	}
}

// TestHeldGoesOnlyToTheClaimsWaiters: a Held hint goes to the processes
// that announced they wait for that very claim, never to the others.
func TestHeldGoesOnlyToTheClaimsWaiters(t *testing.T) {
	store := memory.New()
	owner, waiter, other := follow(t, store, nil), follow(t, store, nil), follow(t, store, nil)
	for _, f := range []follower{waiter, other} {
		knows(t, f, owner)
	}
	ctx := context.Background()
	until := store.ServerTime().Latest.Add(time.Minute)
	_ = waiter.f.Publish(ctx, driver.Event{Kind: driver.Waiting, Key: "k", Epoch: 7, Until: until, Proc: "w"})
	_ = other.f.Publish(ctx, driver.Event{Kind: driver.Waiting, Key: "k", Epoch: 8, Until: until, Proc: "o"})
	owner.rec.waitFor(t, func(e driver.Event) bool { return e.Epoch == 7 })
	owner.rec.waitFor(t, func(e driver.Event) bool { return e.Epoch == 8 })
	_ = owner.f.Publish(ctx, driver.Event{Kind: driver.Held, Key: "k", Epoch: 7, Proc: "x"})
	_ = owner.f.Publish(ctx, driver.Event{Kind: driver.Held, Key: "k", Epoch: 7, Proc: "x"})
	_ = owner.f.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "marker", Epoch: 1, Proc: "x"})
	held := func(e driver.Event) bool { return e.Kind == driver.Held }
	waiter.rec.waitFor(t, held)
	other.rec.waitFor(t, about("marker"))
	if n := other.rec.count(held); n != 0 {
		t.Errorf("a process waiting for another claim got %d Held hints", n)
	}
}

func TestConfigChecks(t *testing.T) {
	store := memory.New()
	for _, c := range []Config{
		{Listen: "nohostport"},
		{Listen: ":0"},
		{Listen: "0.0.0.0:0"},
		{Listen: "0.0.0.0:0", Advertise: "0.0.0.0:7000"},
		{Listen: "127.0.0.1:0", Advertise: "no-port"},
		{Listen: "127.0.0.1:0", Rate: -1},
	} {
		if _, err := New(store, nil, c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
	for _, c := range []Config{
		{Listen: "127.0.0.1:0"},
		{Listen: ":0", Advertise: "10.1.2.3:0"},
		{Listen: "0.0.0.0:7946", Advertise: "pod.example:7946"},
	} {
		if _, err := New(store, nil, c); err != nil {
			t.Errorf("New refused %+v: %v", c, err)
		}
	}
	if _, err := New(noPeers{store}, nil, Config{Listen: "127.0.0.1:0"}); err == nil {
		t.Error("New accepted a store that cannot record peers")
	}
}

// noPeers hides a store's peers (driver.Roles.Peers).
type noPeers struct{ driver.Store }

func (s noPeers) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Peers = nil
	return r
}

// TestAdvertisePortZero: an advertised port of 0 is the port listened on.
func TestAdvertisePortZero(t *testing.T) {
	f, err := New(memory.New(), nil, Config{Listen: "127.0.0.1:0", Advertise: "localhost:0"})
	if err != nil {
		t.Fatal(err)
	}
	stop := f.Follow(newRecorder())
	defer stop()
	host, port, err := net.SplitHostPort(f.Addr())
	if err != nil || host != "localhost" || port == "0" {
		t.Errorf("advertised %q (%v), want localhost and the port listened on", f.Addr(), err)
	}
}

// TestCannotListen: a Feed that cannot listen (its port is taken) runs
// without hints, and still passes the store's feed on.
func TestCannotListen(t *testing.T) {
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	inner := &innerFeed{}
	f, err := New(memory.New(), inner, Config{Listen: taken.LocalAddr().String(), Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	stop := f.Follow(rec)
	defer stop()
	if f.Addr() != "" {
		t.Errorf("Addr = %q, want none", f.Addr())
	}
	inner.handler().Event(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 1, Proc: "z"})
	rec.waitFor(t, about("k"))
	if err := f.Publish(context.Background(), driver.Event{Kind: driver.Ended, Key: "k", Epoch: 1}); err == nil {
		t.Error("Publish without hints or a live store feed reported success")
	}
}

var quietLogger = slog.New(slog.DiscardHandler)

// TestFirstAnnouncementWaitsForReady: an announcement published while the
// process is still reading the hint key and the others' records is sent
// once it has, not dropped (the waiter would otherwise hear of its turn
// only at its poll).
func TestFirstAnnouncementWaitsForReady(t *testing.T) {
	store := memory.New()
	other := follow(t, store, nil)
	open := make(chan struct{})
	g := store.Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
		if c.Op == "HintKey" {
			<-open // the store answers the hint key's read once the test says
		}
		return nil
	})
	f, err := New(g, nil, Config{Listen: "127.0.0.1:0", Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	f.onAwait = func() { close(waiting) }
	t.Cleanup(f.Follow(newRecorder()))
	published := make(chan error, 1)
	go func() {
		published <- f.Publish(context.Background(), driver.Event{Kind: driver.Waiting, Key: "k", Epoch: 1, Until: store.ServerTime().Latest.Add(time.Hour), Proc: "w"})
	}()
	select {
	case <-waiting:
	case err := <-published:
		t.Fatalf("Publish returned before the process was ready, without waiting: %v", err)
	}
	close(open)
	if err := <-published; err != nil {
		t.Fatalf("Publish: %v", err)
	}
	other.rec.waitFor(t, about("k"))
}

// peerCounts is a store in memory that counts the calls of its
// driver.PeerStore.
type peerCounts struct {
	*memory.Store
	keys, puts, reads atomic.Int64
}

func countPeers(mem *memory.Store) *peerCounts {
	p := &peerCounts{}
	counts := map[string]*atomic.Int64{"HintKey": &p.keys, "PutPeer": &p.puts, "Peers": &p.reads}
	p.Store = mem.Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
		if n := counts[c.Op]; n != nil {
			n.Add(1)
		}
		return nil
	})
	return p
}

// TestRecordKeptLightlyWhileHintsReach: a process that no hint reaches
// reads the key and the others' records and writes its own at every
// refresh; once hints reach it, it writes its record every putEvery and
// reads every fullEvery only.
func TestRecordKeptLightlyWhileHintsReach(t *testing.T) {
	shorten := func(f *Feed) {
		f.every.refresh, f.every.put, f.every.full = 20*time.Millisecond, 40*time.Millisecond, 160*time.Millisecond
	}
	mem := memory.New()
	alone := countPeers(mem)
	a := followWith(t, alone, nil, shorten)
	// Alone, it does a whole round every refresh: it keeps doing so
	// (counted, not timed, so that a loaded machine only slows it).
	waitUntil(t, func() bool { return alone.keys.Load() >= 10 && alone.puts.Load() >= 10 && alone.reads.Load() >= 10 })
	// Another process hellos it every 20 ms: hints reach it.
	b := followWith(t, mem, nil, shorten)
	knows(t, b, a)
	waitUntil(t, a.f.reached)
	time.Sleep(100 * time.Millisecond)
	// Over the next 20 record writes: a write every 40 ms, a whole round
	// (the key and the records read) every 160 ms, so about one read of
	// each to four writes; a process that still read every refresh would
	// read once or more per write.
	k0, p0, r0 := alone.keys.Load(), alone.puts.Load(), alone.reads.Load()
	waitUntil(t, func() bool { return alone.puts.Load()-p0 >= 20 })
	k, p, r := alone.keys.Load()-k0, alone.puts.Load()-p0, alone.reads.Load()-r0
	t.Logf("over %d record writes while reached: %d key reads, %d reads of records", p, k, r)
	if 2*k > p || 2*r > p {
		t.Errorf("a process hints reach: %d key reads and %d reads of records to %d record writes; want about one of each to four writes", k, r, p)
	}
}
