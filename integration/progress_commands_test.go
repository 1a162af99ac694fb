package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// cmdLog records the commands one process's driver sent, as its command
// monitor saw them start.
type cmdLog struct {
	mu   sync.Mutex
	cmds []sentCmd
}

type sentCmd struct {
	at   time.Time
	what string // the command's name and collection: "findAndModify dsync_locks_sessions"
}

func (l *cmdLog) options() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
			what := e.CommandName + " " + coll
			if coverage(e.CommandName, e.Command) {
				what += coverageSuffix
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			l.cmds = append(l.cmds, sentCmd{time.Now(), what})
		},
	})
}

// coverageSuffix marks, in a cmdLog, the commands that extend a held
// key's coverage (dsync/internal/queue, refresh.go): once per bucket
// span, at its boundary, a holder inserts its key's gate of the next
// bucket and reads the protocol document that confirms it, whatever its
// work does. A window that a boundary falls in has them; one that none
// falls in has not.
const coverageSuffix = " (coverage)"

// coverage reports whether cmd (named name) extends a key's coverage:
// an insert of gates only, or a find of the protocol document by _id.
func coverage(name string, cmd bson.Raw) bool {
	switch name {
	case "insert":
		docs, ok := cmd.Lookup("documents").ArrayOK()
		if !ok {
			return false
		}
		vals, err := docs.Values()
		if err != nil || len(vals) == 0 {
			return false
		}
		for _, v := range vals {
			d, ok := v.DocumentOK()
			if kind, _ := d.Lookup("kind").StringValueOK(); !ok || kind != driver.KindGate {
				return false
			}
		}
		return true
	case "find":
		id, _ := cmd.Lookup("filter", "_id").StringValueOK()
		return id == driver.ProtocolID
	}
	return false
}

// since returns the commands started after t.
func (l *cmdLog) since(t time.Time) []sentCmd {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sentCmd
	for _, c := range l.cmds {
		if c.at.After(t) {
			out = append(out, c)
		}
	}
	return out
}

// renewal is how a session renewal shows in a cmdLog.
const renewal = "findAndModify dsync_locks_sessions"

// afterRenewals waits until n renewals have started after t, and returns
// the time the n-th started.
func (l *cmdLog) afterRenewals(ctx context.Context, t time.Time, n int) (time.Time, error) {
	for {
		seen := 0
		for _, c := range l.since(t) {
			if c.what == renewal {
				if seen++; seen == n {
					return c.at, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d renewals after %v: saw %d: %w", n, t, seen, context.Cause(ctx))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// between counts the commands started in (from, to], by name and
// collection, but those that extend a key's coverage (coverage), which
// come at a bucket span's boundary whatever the holder does.
func (l *cmdLog) between(from, to time.Time) map[string]int {
	out := make(map[string]int)
	for _, c := range l.since(from) {
		if !c.at.After(to) && !strings.HasSuffix(c.what, coverageSuffix) {
			out[c.what]++
		}
	}
	return out
}

// renewalWindows is how many renew intervals a window of
// TestProgressSendsNothing spans: an even number, as the session's read
// beside every other renewal comes once per two.
const renewalWindows = 4

// lostWindowsAllowed is how many windows of TestProgressSendsNothing in
// a row may lose their hold with its lease before the test fails: a
// store that confirms no renewal for a TTL (CI's README stage runs every
// package at once on two cores) ends a hold, as it must, and such a
// window is taken again.
const lostWindowsAllowed = 2

// sendsNothingDeadline is the progress deadline of the holder that
// reports in TestProgressSendsNothing: long enough that a starved
// reporting goroutine (a loaded machine, -race) never stalls it, as a stall
// would send its release and stall record in the windows compared.
const sendsNothingDeadline = time.Minute

// TestProgressSendsNothing: reporting progress sends nothing to the
// store. A holder with a progress deadline reports more than 10^4 times
// over a few renew intervals; its process sends, in that window, the same
// commands as another process sends over as many renew intervals while
// its holder, without a deadline, reports nothing: renewals only. The
// windows run from one renewal to another, so that they hold the same
// periodic commands. Each holder has a process (and a command log) of its
// own, so that nothing one leaves behind (a release resent in the
// background) can land in the other's window.
func TestProgressSendsNothing(t *testing.T) {
	var silentLog, reportsLog cmdLog
	base := mongotest.NewDatabase(t)
	// Without direct hints: their transport reads the other processes'
	// records in the background once it starts (hint.Feed), at times
	// of its own, and a read that lands in one window and not the other
	// is not what this test compares.
	noHints := dsync.ClientWithHints("", "")
	silent, silentSettled := settlingClient(t, mongotest.SameDatabase(t, base, silentLog.options()), noHints)
	reports, reportsSettled := settlingClient(t, mongotest.SameDatabase(t, base, reportsLog.options()), noHints)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// window holds m over renewalWindows renew intervals and returns the
	// commands its process sent in them, the reports made, and whether
	// the hold was lost in them (then its commands are not a holder's).
	window := func(log *cmdLog, settled <-chan struct{}, m *dsync.Mutex, report bool) (map[string]int, int64, bool) {
		t.Helper()
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		// A Client on loopback sets its direct hints up in the background
		// after its first session opens: those commands are not the
		// holder's, and come before the windows.
		select {
		case <-settled:
		case <-ctx.Done():
			t.Fatal("the Client never settled its feed")
		}
		stop := make(chan struct{})
		var n atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if report {
					for range 50 {
						m.Progress()
					}
					n.Add(50)
				}
				time.Sleep(time.Millisecond)
			}
		}()
		from, err := log.afterRenewals(ctx, time.Now(), 1)
		if err != nil {
			t.Fatal(err)
		}
		before := n.Load()
		to, err := log.afterRenewals(ctx, from, renewalWindows)
		if err != nil {
			t.Fatal(err)
		}
		reports := n.Load() - before
		close(stop)
		<-done
		select {
		case <-m.Lost():
			// Reports never end a hold whose deadline is a minute away:
			// a stall here is a defect. A lease lost because the store
			// confirmed no renewal in time (a loaded machine) is not,
			// but it spoils the window: the caller takes another.
			if errors.Is(m.Err(), dsync.ErrStalled) {
				t.Fatalf("the hold stalled during the window (report=%v): %v", report, m.Err())
			}
			t.Logf("the hold was lost during the window (report=%v): %v; its commands are not a holder's, another window is taken", report, m.Err())
			if err := m.UnlockContext(ctx); err != nil && !errors.Is(err, dsync.ErrLost) {
				t.Fatalf("unlock after a lost hold: %v", err)
			}
			return nil, 0, true
		default:
		}
		if err := m.UnlockContext(ctx); err != nil {
			t.Fatalf("unlock after the window: %v", err)
		}
		return log.between(from, to), reports, false
	}
	// heldWindow takes windows until one keeps its hold throughout, at
	// most lostWindowsAllowed+1 of them.
	heldWindow := func(log *cmdLog, settled <-chan struct{}, m *dsync.Mutex, report bool) (map[string]int, int64) {
		t.Helper()
		for range lostWindowsAllowed + 1 {
			if cmds, n, lost := window(log, settled, m, report); !lost {
				return cmds, n
			}
		}
		t.Fatalf("the hold was lost in %d windows in a row (report=%v)", lostWindowsAllowed+1, report)
		return nil, 0
	}

	plain, err := dsync.NewMutex(silent, "silent")
	if err != nil {
		t.Fatal(err)
	}
	watched, err := dsync.NewMutex(reports, "reports", dsync.WithProgressDeadline(sendsNothingDeadline))
	if err != nil {
		t.Fatal(err)
	}
	without, _ := heldWindow(&silentLog, silentSettled, plain, false)
	withReports, n := heldWindow(&reportsLog, reportsSettled, watched, true)
	t.Logf("over %d renew intervals (TTL %v): %d progress reports; commands sent %v, and %v by a holder that reports nothing",
		renewalWindows, progressTTL, n, withReports, without)
	if n < 10_000 {
		t.Errorf("only %d progress reports in the window, want at least 10^4", n)
	}
	if !maps.Equal(withReports, without) {
		t.Errorf("commands sent while progress is reported %v, differ from those of a holder that reports nothing %v", withReports, without)
	}
	for what := range withReports {
		if what != renewal && what != "find dsync_locks_sessions" {
			t.Errorf("a holder sent %q: not a renewal", what)
		}
	}
}
