package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The scale scenario: what grows with the history of a collection, and
// with the number of processes waiting for one key.
//
// Idle keys, in two series, each in a namespace of its own grown in turn
// to each size of ScaleKeys by loaders (ScaleLoaders Clients of this
// process, each locking and unlocking new keys named like a user names a
// dated job, "report-2026-11-23-<i>"):
//
//   - keys in the collection: the keys were used within the idle age (the
//     namespace's Clients do not compact), so every document they left is
//     there; a loader locks and unlocks a random one of them, then a fresh
//     Client (cold caches, as a cron job's process) makes its first
//     Lock+Unlock of that key, whose queue is live, with history. The
//     peers, which compact nothing, run this series only;
//   - keys compacted: the namespace's Clients compact keys idle past a
//     short idle age (IdleCompactor), the scenario waits for it, then a
//     fresh Client makes its first Lock+Unlock of a random idle key.
//
// At each size of each series the store's documents are counted and the
// driver's status page of ScaleStatusLimit keys is timed.
//
// Waiters: one Client holds a key and W others wait for it, in child
// processes (packed several to a process beyond ScaleProcs processes, on
// two cores); handoffs as in Handoff, then, while they wait idle, what
// each waiter sends by command, and the server's CPU.

// Optional Driver interfaces of the scale scenario.
type (
	// A StatusPager shows a page of the locks of namespace ns as its
	// users would see it (dsync: the dsync command's status), cut short
	// after timeout. how says how the page was asked for.
	StatusPager interface {
		StatusPage(ctx context.Context, ns string, limit int, timeout time.Duration) (took time.Duration, how string, timedOut bool, err error)
	}
	// A DocCounter counts what a namespace stores, each count under the
	// name of its figure as the driver's users know the place:
	// "documents in the lock collection", one per collection, or the
	// store's equivalent ("keys in Redis"; the unit is "keys" for a name
	// that starts with "keys", "docs" otherwise).
	DocCounter interface {
		CountDocs(ctx context.Context, ns string) (map[string]int64, error)
	}
	// An IdleCompactor is a Driver whose store compacts idle keys (keys
	// nobody held or awaited for an idle age). The scale scenario sets up
	// each series' namespace before any Client connects to it:
	// KeepIdle(ns) turns compaction off in ns (keys in the collection);
	// CompactIdle(ns) makes ns's Clients compact keys idle past a short
	// age and returns it (keys compacted; 0: not in this run), and the
	// scenario waits for the compaction before it counts and measures.
	IdleCompactor interface {
		KeepIdle(ns string)
		CompactIdle(ns string) time.Duration
	}
)

// What the scale scenario asks a Lacker (Lacks) about, for the figures
// that do not apply to a library: "—" in the tables, with its reason.
const (
	// ScaleStatusPage: the library has no status page.
	ScaleStatusPage = "scale: status page"
	// ScaleCompaction: the library compacts no idle keys.
	ScaleCompaction = "scale: compaction"
)

// The figures the scale scenario reports that the targets and the plot
// read.
const (
	scaleFirstP50  = "fresh Client's first Lock+Unlock p50"
	scaleFirstP99  = "fresh Client's first Lock+Unlock p99"
	scaleFirstCmds = "fresh Client's first Lock+Unlock: commands"
	scaleFirstCPU  = "fresh Client's first Lock+Unlock: server CPU"
	scaleRelockP50 = "a loader's Lock+Unlock of the key just before, p50"
	scaleStatus    = "status page"
	scaleDocs      = "documents"
	scaleLockDocs  = "documents in the lock collection"
	scaleIdleAge   = "keys compacted once idle for"
	// scaleCompactedAfter: when the documents stopped falling, counted
	// from the end of the loading (at least twice the idle age).
	scaleCompactedAfter = "documents stopped falling, after the loading"
	scaleLoadRate       = "loading: new keys locked and unlocked per second"
	scaleHandoffP50     = "handoff Unlock→Lock p50"
	scaleHandoffP99     = "handoff Unlock→Lock p99"
	scalePerWaiter      = "while waiting: commands/s per waiter"
	scaleBytes          = "while waiting: bytes/s per waiter"
	scaleServerCPU      = "while waiting: server CPU"
	scaleHolder         = "while waiting: commands/s sent by the holder"
	scaleByName         = "while waiting: %s/s per waiter"
	scaleFirstName      = "fresh Client's first Lock+Unlock: %s commands"
	scaleOtherCmds      = "fresh Client's first Lock+Unlock: the loaders' commands meanwhile"
	scaleOtherName      = "fresh Client's first Lock+Unlock: the loaders' %s commands meanwhile"
)

// The series of idle keys, named by the end of their params ("1,000 keys
// in the collection"). Reports written before the two series have one,
// "idle keys" (keysOld): keys compacted where the library compacted
// them, in the collection where it did not.
const (
	keysKept      = "keys in the collection"
	keysCompacted = "keys compacted"
	keysOld       = "idle keys"
)

// scaleKeysParam and scaleWaitersParam name a size of each part.
func scaleKeysParam(n int, series string) string { return thousands(n) + " " + series }
func scaleWaitersParam(w int) string             { return count(w, "waiter") }

// thousands writes n with thousands separators: 100,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// scale runs the waiters part first: it is the shorter, and the idle-key
// part may take long at its largest sizes.
func (rn *runner) scale(ctx context.Context) error {
	// Every namespace is dropped at the end: FerretDB's SQLite backend
	// failed inserts into a new collection ("no such table") right after
	// another namespace was dropped, and the waiters' event streams with
	// them.
	var dropped []string
	rn.dropLater = func(ns string) { dropped = append(dropped, ns) }
	defer func() {
		rn.dropLater = nil
		for _, ns := range dropped {
			rn.drop(ctx, ns)
		}
	}()
	var errs []error
	for _, w := range rn.o.ScaleWaiters {
		if err := rn.scaleWaiters(ctx, w); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", scaleWaitersParam(w), err))
		}
	}
	if len(rn.o.ScaleKeys) > 0 {
		if err := rn.scaleKeys(ctx); err != nil {
			errs = append(errs, fmt.Errorf("idle keys: %w", err))
		}
	}
	return errors.Join(errs...)
}

// scaleKey names the i-th idle key.
func scaleKey(i int) string { return fmt.Sprintf("report-2026-11-23-%d", i) }

// A keySeries is one series of idle keys: its namespace, its loaders and
// how far they loaded it.
type keySeries struct {
	name string // keysKept or keysCompacted
	ns   string
	// age: the idle age after which the namespace's Clients compact (0:
	// they do not).
	age time.Duration
	// relock: a loader locks and unlocks the key a fresh Client is about
	// to lock, just before it.
	relock bool

	loaders  []Conn
	meters   []*Meter
	loaded   int
	loads    []loadStep // the loadings so far, in order
	lastLoad time.Time
	// stopped says why the sizes from here on are not measured (their
	// loading would take longer than ScaleLoadBudget).
	stopped string
}

// why returns the driver's reason for lacking what (Lacker), or def.
func (rn *runner) why(what, def string) string {
	if l, ok := rn.d.(Lacker); ok {
		if s := l.Lacks(what); s != "" {
			return s
		}
	}
	return def
}
