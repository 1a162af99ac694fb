package hint_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// Direct hints by default: on for a store that reports it is reached
// over loopback (driver.Roles.Loopback), off otherwise, and off when
// asked.

// reporting is a process's store that reports whether it is reached
// over loopback.
type reporting struct {
	*counting
	loopback bool
}

func (r reporting) Roles() driver.Roles {
	roles := r.counting.Roles()
	roles.Loopback = r
	return roles
}

func (r reporting) Loopback(context.Context) bool { return r.loopback }

// defaultProcess is a Client given no ClientWithHints unless in opts, on
// a store that reports loopback (or, with report false, says nothing),
// that has taken a lock once (whose end starts settling its feed, in
// the background), and has settled its feed. It returns the Client's
// hint transport, nil if it has none.
func defaultProcess(t *testing.T, store *memory.Store, report, loopback bool, opts ...dsync.ClientOption) (process, *hint.Feed) {
	t.Helper()
	st := countingOn(store)
	var under driver.Store = st
	if report {
		under = reporting{st, loopback}
	}
	var (
		mu    sync.Mutex
		feeds []*hint.Feed
	)
	settled := make(chan struct{})
	hooked := clienthook.Wrap[driver.Store](under, clienthook.Settings{Hints: func(f *hint.Feed) {
		mu.Lock()
		feeds = append(feeds, f)
		mu.Unlock()
	}, Settled: func() { close(settled) }})
	opts = append([]dsync.ClientOption{
		dsync.ClientWithLogger(quiet), dsync.ClientWithIdleAge(0),
		dsync.ClientWithWakeups(false),
		dsync.ClientWithPollInterval(time.Hour), dsync.ClientWithSafetyPoll(time.Hour),
		dsync.ClientWithTTL(time.Minute),
	}, opts...)
	c, err := dsync.NewClient(hooked, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m := mutex(t, c, "warm-up")
	if err := m.LockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.UnlockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-settled:
	case <-time.After(time.Minute):
		t.Fatal("the Client did not settle its feed after its first claim ended")
	}
	mu.Lock()
	defer mu.Unlock()
	switch len(feeds) {
	case 0:
		return process{c, st}, nil
	case 1:
		return process{c, st}, feeds[0]
	}
	t.Fatalf("the Client made %d hint transports", len(feeds))
	return process{}, nil
}

// TestHintsOnByDefaultOnLoopback: two Clients given no ClientWithHints,
// on a store reached over loopback, take hints: with the store's feed off
// and polls an hour apart, a release wakes the waiter by hint, as its
// Stats show.
func TestHintsOnByDefaultOnLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := memory.New()
	s := newSpy(t, store)
	a, af := defaultProcess(t, store, true, true)
	b, bf := defaultProcess(t, store, true, true)
	if af == nil || bf == nil {
		t.Fatal("a Client on a store reached over loopback made no hint transport")
	}
	for _, f := range []*hint.Feed{af, bf} {
		waitUntil(t, func() bool { return slices.Contains(s.f.Peers(), f.ID()) })
		if got := f.Addr(); got == "" || got[:len("127.0.0.1:")] != "127.0.0.1:" {
			t.Errorf("the Client takes hints at %q, want an address of 127.0.0.1", got)
		}
	}
	contend(t, ctx, a, b, s).release(t)
	if st := bf.Stats(); st.Woke == 0 {
		t.Errorf("the waiter's hint stats: %+v, want it woken by a hint", st)
	}
	if st := af.Stats(); st.Taken == 0 || st.Sent == 0 {
		t.Errorf("the holder's hint stats: %+v, want hints taken and sent", st)
	}
}

// TestNoHintsByDefaultElsewhere: a Client given no ClientWithHints, on a
// store that says nothing of how it is reached (the store in memory) or
// says it is not over loopback, takes no hints: it makes no transport,
// and records nothing for them in the store.
func TestNoHintsByDefaultElsewhere(t *testing.T) {
	for _, c := range []struct {
		name             string
		report, loopback bool
	}{{"says nothing", false, false}, {"not over loopback", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			store := memory.New()
			if _, f := defaultProcess(t, store, c.report, c.loopback); f != nil {
				t.Errorf("the Client made a hint transport, at %q", f.Addr())
			}
			if ps, err := store.Roles().Peers.Peers(context.Background(), time.Time{}); err != nil || len(ps) != 0 {
				t.Errorf("peers recorded: %v, %v; want none", ps, err)
			}
		})
	}
}

// TestHintsTurnedOff: ClientWithHints("", "") turns the default off on a
// store reached over loopback.
func TestHintsTurnedOff(t *testing.T) {
	store := memory.New()
	if _, f := defaultProcess(t, store, true, true, dsync.ClientWithHints("", "")); f != nil {
		t.Errorf("the Client made a hint transport, at %q", f.Addr())
	}
	if ps, err := store.Roles().Peers.Peers(context.Background(), time.Time{}); err != nil || len(ps) != 0 {
		t.Errorf("peers recorded: %v, %v; want none", ps, err)
	}
}

// infoLines is a slog.Handler that keeps the Info records it is given.
type infoLines struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *infoLines) Enabled(_ context.Context, lv slog.Level) bool { return lv == slog.LevelInfo }
func (l *infoLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *infoLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *infoLines) WithGroup(string) slog.Handler      { return l }

// about returns the records whose message contains s, each as its
// message and its attributes.
func (l *infoLines) about(s string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.recs {
		if strings.Contains(r.Message, s) {
			m := map[string]string{"msg": r.Message}
			r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
			out = append(out, m)
		}
	}
	return out
}

// TestHintsByDefaultSaySo: a Client whose hints the default turned on
// says so once, at Info, through its logger: where it listens, and why
// (the store is on loopback), as it first follows its feed; a Client
// given ClientWithHints, or whose store is not on loopback, does not.
func TestHintsByDefaultSaySo(t *testing.T) {
	const about = "direct hints on by default"
	store := memory.New()
	var on, asked, off infoLines
	p, f := defaultProcess(t, store, true, true, dsync.ClientWithLogger(slog.New(&on)))
	if f == nil {
		t.Fatal("a Client on a store reached over loopback made no hint transport")
	}
	m := mutex(t, p.c, "again") // a second lock, and session: no second line
	if err := m.LockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.UnlockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := on.about(about)
	if len(lines) != 1 {
		t.Fatalf("logged %v; want one line about the default", lines)
	}
	if l := lines[0]; l["listen"] != f.Addr() || !strings.Contains(l["msg"], "loopback") {
		t.Errorf("logged %v; want the address it listens at, %q, and that the store is on loopback", l, f.Addr())
	}
	defaultProcess(t, store, true, true, dsync.ClientWithLogger(slog.New(&asked)), dsync.ClientWithHints("127.0.0.1:0", ""))
	defaultProcess(t, store, true, false, dsync.ClientWithLogger(slog.New(&off)))
	for name, l := range map[string]*infoLines{"given ClientWithHints": &asked, "not on loopback": &off} {
		if lines := l.about(about); len(lines) != 0 {
			t.Errorf("a Client %s logged %v", name, lines)
		}
	}
}
