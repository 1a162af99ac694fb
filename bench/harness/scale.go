package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// scaleKeys grows each series' namespace to each size in turn and
// measures, at each, a fresh Client's first Lock+Unlock and a status page.
func (rn *runner) scaleKeys(ctx context.Context) error {
	kept := &keySeries{name: keysKept, ns: rn.ns("scalekept"), relock: true}
	comp := &keySeries{name: keysCompacted, ns: rn.ns("scale")}
	// compLacks: why the library has no compacted series ("" if it has).
	compLacks := rn.why(ScaleCompaction, "the library compacts no idle keys")
	if ic, ok := rn.d.(IdleCompactor); ok {
		compLacks = ""
		ic.KeepIdle(kept.ns)
		comp.age = ic.CompactIdle(comp.ns)
	}
	// The compacted series loads first at each size: its keys age (and
	// are compacted) while the other series loads.
	var series []*keySeries
	if comp.age > 0 {
		series = append(series, comp)
	} else if compLacks == "" {
		rn.logf("%s: scale: no idle age given: the series %q is not measured", rn.d.Name(), keysCompacted)
	}
	series = append(series, kept)
	for _, s := range series {
		rn.dropLater(s.ns)
		for range rn.o.ScaleLoaders {
			m := NewMeter()
			c, err := rn.d.Connect(ctx, m, s.ns)
			if err != nil {
				return err
			}
			defer c.Close()
			s.loaders, s.meters = append(s.loaders, c), append(s.meters, m)
		}
	}
	var errs []error
	for _, n := range slices.Sorted(slices.Values(rn.o.ScaleKeys)) {
		for _, s := range series {
			if err := rn.loadSeries(ctx, s, n); err != nil {
				// The series stops; the other goes on.
				s.stopped = fmt.Sprintf("not measured: loading %s keys failed: %v", thousands(n), err)
				rn.logf("%s: scale: %s: %s", rn.d.Name(), s.name, s.stopped)
				errs = append(errs, fmt.Errorf("%s: loading %d keys: %w", s.name, n, err))
			}
		}
		for _, s := range series {
			param := scaleKeysParam(n, s.name)
			if s.stopped != "" {
				rn.r.na(Scale, param, scaleFirstP50, "ms", s.stopped)
				continue
			}
			docsNote := ""
			if s.age > 0 {
				rn.r.add(Scale, param, scaleIdleAge, "s", []float64{s.age.Seconds()}, "")
				took, err := rn.awaitCompaction(ctx, s, n)
				if err != nil {
					rn.logf("%s: scale: %v", rn.d.Name(), err)
					docsNote = err.Error()
				} else if took > 0 {
					rn.r.add(Scale, param, scaleCompactedAfter, "s", []float64{took.Seconds()}, "")
				}
			}
			rn.countDocs(ctx, s.ns, param, docsNote)
			if err := rn.firstLocks(ctx, s, n, param, others(series)); err != nil {
				rn.logf("%s: scale %s: first Lock+Unlock: %v", rn.d.Name(), param, err)
				errs = append(errs, fmt.Errorf("%s, %d keys: %w", s.name, n, err))
				continue
			}
			rn.statusPage(ctx, s.ns, param)
		}
		if compLacks != "" {
			param := scaleKeysParam(n, keysCompacted)
			rn.r.lackFigure(Scale, param, scaleFirstP50, "ms", compLacks)
			rn.r.lackFigure(Scale, param, scaleFirstP99, "ms", compLacks)
		}
	}
	return errors.Join(errs...)
}

// loadSeries grows series s to n keys, unless that would take longer than
// ScaleLoadBudget (then s stops: its sizes from n on are not measured).
func (rn *runner) loadSeries(ctx context.Context, s *keySeries, n int) error {
	if n <= s.loaded || s.stopped != "" {
		return nil
	}
	if s.relock && rn.o.ScaleKeptMax > 0 && n > rn.o.ScaleKeptMax {
		s.stopped = fmt.Sprintf("not measured: this run grew the series to %s keys at most (-scale-kept-max)", thousands(rn.o.ScaleKeptMax))
		rn.logf("%s: scale: %s: %d keys %s", rn.d.Name(), s.name, n, s.stopped)
		return nil
	}
	budget := rn.o.ScaleLoadBudget
	keys := n - s.loaded
	if est, ok := loadEstimate(s.loads, s.loaded, n); ok && est > budget {
		last := s.loads[len(s.loads)-1]
		s.stopped = fmt.Sprintf("not measured: loading %d more keys would take about %v (%.0f keys/s from %s to %s keys), more than the %v allowed",
			keys, est.Round(time.Minute), float64(last.to-last.from)/last.took.Seconds(), thousands(last.from), thousands(last.to), budget)
		rn.logf("%s: scale: %s: %d keys %s", rn.d.Name(), s.name, n, s.stopped)
		return nil
	}
	param := scaleKeysParam(n, s.name)
	before := map[string]int64{}
	for _, m := range s.meters {
		for name, k := range m.ByName() {
			before[name] += k
		}
	}
	t := time.Now()
	lctx, cancel := context.WithTimeout(ctx, budget)
	failures, err := rn.loadKeys(lctx, s.loaders, s.loaded, n)
	cancel()
	took := time.Since(t)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		s.stopped = fmt.Sprintf("not measured: loading %d keys was cut short after %v", n, budget)
		rn.logf("%s: scale: %s: %d keys %s", rn.d.Name(), s.name, n, s.stopped)
		return nil
	}
	if err != nil {
		return err
	}
	loadNote := ""
	if failures > 0 {
		loadNote = fmt.Sprintf("%s of a Lock+Unlock failed and were tried again", count(failures, "attempt"))
	}
	sent := map[string]int64{}
	var total int64
	for _, m := range s.meters {
		for name, k := range m.ByName() {
			sent[name] += k
			total += k
		}
	}
	for name, k := range before {
		sent[name] -= k
		total -= k
	}
	s.loads = append(s.loads, loadStep{from: s.loaded, to: n, took: took})
	rate := float64(keys) / took.Seconds()
	rn.r.add(Scale, param, fmt.Sprintf("%s (%d Clients)", scaleLoadRate, len(s.loaders)), "keys/s", []float64{rate}, loadNote)
	rn.r.add(Scale, param, "loading: commands per new key", "cmds", []float64{float64(total) / float64(keys)}, loadNote)
	rn.logf("%s: scale: %s: loaded keys %d to %d in %v (%.0f keys/s), commands %v", rn.d.Name(), s.name, s.loaded, n,
		took.Round(time.Millisecond), rate, sent)
	s.loaded, s.lastLoad = n, time.Now()
	return nil
}

// A loadStep is one loading of a series: keys from..to-1, and how long
// it took.
type loadStep struct {
	from, to int
	took     time.Duration
}

// loadEstimate returns how long loading keys from..to-1 may take after
// the loadings steps, and whether it can tell (not before a first one).
// The time per key is the last loading's, grown as it grew between the
// last two (a store that reads the whole collection for every key slows
// as the collection grows; the growth is taken as at most linear in the
// size and never below flat), from the middle of the last loading's keys
// to the middle of the next's.
func loadEstimate(steps []loadStep, from, to int) (time.Duration, bool) {
	if len(steps) == 0 || to <= from {
		return 0, false
	}
	mid := func(a, b int) float64 { return float64(a+b) / 2 }
	perKey := func(st loadStep) float64 { return st.took.Seconds() / float64(st.to-st.from) }
	last := steps[len(steps)-1]
	growth := 0.0 // the exponent of the time per key in the size
	if len(steps) > 1 {
		prev := steps[len(steps)-2]
		if a, b := perKey(prev), perKey(last); a > 0 && b > 0 {
			growth = math.Log(b/a) / math.Log(mid(last.from, last.to)/mid(prev.from, prev.to))
			growth = min(max(growth, 0), 1)
		}
	}
	t := perKey(last) * math.Pow(mid(from, to)/mid(last.from, last.to), growth) * float64(to-from)
	return time.Duration(t * float64(time.Second)), true
}

// loadAttempts is how many times a loader tries a key's Lock+Unlock: an
// embedded FerretDB on a loaded machine fails a write now and then
// (SQLite's "database is locked").
const loadAttempts = 3

// loadKeys locks and unlocks keys from..to-1 with the loaders, each
// taking the next key when done with one (several Lock+Unlock at once per
// loader did not load FerretDB faster: its writes wait for each other).
// A key whose Lock or Unlock fails is tried again, with a new lock; it
// returns how many failed.
func (rn *runner) loadKeys(ctx context.Context, loaders []Conn, from, to int) (failures int, err error) {
	// The first key alone: the collections are created once, not by
	// several Clients at once (which FerretDB's SQLite backend does not
	// always survive).
	var failed atomic.Int64
	if from < to {
		var err error
		for range loadAttempts {
			if err = loadKey(ctx, loaders[0], from); err == nil || ctx.Err() != nil {
				break
			}
			failed.Add(1)
		}
		if err != nil {
			return int(failed.Load()), fmt.Errorf("key %d, %d attempts: %w", from, loadAttempts, err)
		}
		from++
	}
	var next atomic.Int64
	next.Store(int64(from))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, c := range loaders {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				var err error
				for range loadAttempts {
					if err = loadKey(ctx, c, i); err == nil || ctx.Err() != nil {
						break
					}
					failed.Add(1)
				}
				if err != nil {
					cancel(fmt.Errorf("key %d, %d attempts: %w", i, loadAttempts, err))
					return
				}
			}
		})
	}
	wg.Wait()
	return int(failed.Load()), context.Cause(ctx)
}

// loadKey locks and unlocks the i-th idle key.
func loadKey(ctx context.Context, c Conn, i int) error {
	l, err := c.NewMutex(scaleKey(i), DefaultTTL)
	if err != nil {
		return err
	}
	if err := l.Lock(ctx); err != nil {
		return err
	}
	return l.Unlock(ctx)
}

// compactionWait bounds how long after a loading the scenario waits for
// the compaction: it ends sooner once the documents stop falling.
const compactionWait = 40 * time.Minute

// awaitCompaction waits until the keys of s loaded up to its last loading
// are past the idle age and the store's documents stop falling, and
// returns how long after the loading they stopped.
func (rn *runner) awaitCompaction(ctx context.Context, s *keySeries, n int) (time.Duration, error) {
	// A key is compacted once it is idle for the age past the end of its
	// coverage (two bucket spans of a quarter of the age), at a sweep
	// (every span or so).
	time.Sleep(time.Until(s.lastLoad.Add(2 * s.age)))
	dc, ok := rn.d.(DocCounter)
	if !ok {
		return 0, nil
	}
	// Compaction runs in the background of the store's Clients, one
	// sweep at a time, each a few commands over the whole collection: it
	// falls behind a loading that outpaces it. Count the lock
	// collection's documents (all the store's where the driver names no
	// lock collection) until they stop falling: until no count for half
	// the idle age (two bucket spans: a sweep at least) went below the
	// lowest before it, which is taken as the end. Other documents come
	// and go meanwhile (sessions, events, gates of the sweeps' lock), so
	// a count that rises again does not count as falling.
	deadline := s.lastLoad.Add(compactionWait)
	low := int64(-1)
	var lowAt time.Time // when low was first counted
	for time.Now().Before(deadline) {
		docs, err := dc.CountDocs(ctx, s.ns)
		if err != nil {
			// FerretDB's SQLite backend interrupts a read now and then
			// while others write: count again.
			rn.logf("%s: scale: %d keys: counting: %v", rn.d.Name(), n, err)
			time.Sleep(5 * time.Second)
			continue
		}
		count, ok := docs[scaleLockDocs]
		if !ok {
			for _, c := range docs {
				count += c
			}
		}
		switch {
		case low < 0 || count < low:
			low, lowAt = count, time.Now()
			rn.logf("%s: scale: %d keys: %d documents, %v after the loading", rn.d.Name(), n, count, time.Since(s.lastLoad).Round(time.Second))
		case time.Since(lowAt) >= s.age/2:
			took := lowAt.Sub(s.lastLoad)
			rn.logf("%s: scale: %d keys compacted to %d documents, %v after the loading", rn.d.Name(), n, low, took.Round(time.Second))
			return took, nil
		}
		time.Sleep(5 * time.Second)
	}
	return 0, fmt.Errorf("compaction not over: the documents were still falling %v after the loading", compactionWait)
}

// countDocs reports what the namespace stores, by collection.
func (rn *runner) countDocs(ctx context.Context, ns, param, note string) {
	dc, ok := rn.d.(DocCounter)
	if !ok {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	t := time.Now()
	var docs map[string]int64
	var err error
	for range 3 { // FerretDB interrupts a read now and then
		if docs, err = dc.CountDocs(cctx, ns); err == nil || cctx.Err() != nil {
			break
		}
		rn.logf("%s: scale %s: counting documents: %v", rn.d.Name(), param, err)
	}
	if err != nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		unit := "docs"
		if strings.HasPrefix(name, "keys") {
			unit = "keys"
		}
		rn.r.add(Scale, param, name, unit, []float64{float64(docs[name])}, note)
	}
	rn.logf("%s: scale %s: counted in %v: %v", rn.d.Name(), param, time.Since(t).Round(time.Millisecond), docs)
}

// others returns the meters of every series' loaders: the Clients that
// stay connected while fresh Clients make their first Lock+Unlock.
func others(series []*keySeries) []*Meter {
	var ms []*Meter
	for _, s := range series {
		ms = append(ms, s.meters...)
	}
	return ms
}

// firstLocks measures fresh Clients' first Lock+Unlock of random keys
// among the first n of series s, one Client at a time: each timed from
// its connection to the return of its Unlock. In a series with relock, a
// loader locks and unlocks the key just before (not timed). What the
// other Clients (loaders, whose meters are others) send to the server
// during those Lock+Unlocks is counted too, by command: their background
// work shares the server with the fresh Client (a getMore of their event
// streams is counted when it returns, most after waiting seconds).
func (rn *runner) firstLocks(ctx context.Context, s *keySeries, n int, param string, others []*Meter) error {
	var lat []float64
	byName := map[string]int64{}
	var total int64
	otherNames := map[string]int64{}
	var cpu time.Duration
	cpuOK := true
	start := time.Now()
	samples, cut := 0, 0
	var relockCut bool
	// failed: fresh Clients whose Lock+Unlock failed (FerretDB's SQLite
	// backend interrupts a command now and then on a busy machine), not
	// counted as samples; a size gives up after maxFailed.
	const maxFailed = 3
	var failed []error
	limit := ms(int64(rn.o.ScaleFreshTimeout))
	var relocks []float64
	for samples < rn.o.ScaleFresh && cut == 0 && len(failed) < maxFailed {
		if samples >= 3 && time.Since(start) > rn.o.ScaleFreshBudget {
			break
		}
		key := rand.N(n)
		if s.relock {
			rctx, cancel := context.WithTimeout(ctx, rn.o.ScaleFreshTimeout)
			a := Mono()
			err := loadKey(rctx, s.loaders[0], key)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					failed = append(failed, fmt.Errorf("the loader's Lock+Unlock before: %w", err))
					rn.logf("%s: scale %s: %v", rn.d.Name(), param, failed[len(failed)-1])
					continue
				}
				relockCut = true
				break
			}
			relocks = append(relocks, ms(Mono()-a))
		}
		m := NewMeter()
		for _, o := range others {
			o.Record()
		}
		cpu0, ok0 := ProcessCPU(rn.o.ServerPID)
		took, err := func() (int64, error) {
			// A Lock retries what fails; one that cannot finish (every
			// read of a first Lock times out, say) is cut short.
			lctx, cancel := context.WithTimeout(ctx, rn.o.ScaleFreshTimeout)
			defer cancel()
			a := Mono()
			c, err := rn.d.Connect(lctx, m, s.ns)
			if err != nil {
				return 0, err
			}
			defer c.Close()
			l, err := c.NewMutex(scaleKey(key), DefaultTTL)
			if err != nil {
				return 0, err
			}
			if err := l.Lock(lctx); err != nil {
				return 0, err
			}
			if err := l.Unlock(lctx); err != nil {
				return 0, err
			}
			return Mono() - a, nil
		}()
		cpu1, ok1 := ProcessCPU(rn.o.ServerPID)
		var meanwhile []Event
		for _, o := range others {
			meanwhile = append(meanwhile, o.Stop()...)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return err
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			failed = append(failed, err)
			rn.logf("%s: scale %s: a fresh Client's Lock+Unlock: %v", rn.d.Name(), param, err)
			continue
		case err != nil:
			cut++ // this size is past the timeout: no more samples
			lat = append(lat, limit)
		default:
			lat = append(lat, ms(took))
		}
		cpu += cpu1 - cpu0
		cpuOK = cpuOK && ok0 && ok1
		for name, k := range m.ByName() {
			byName[name] += k
			total += k
		}
		for _, e := range meanwhile {
			otherNames[e.Name]++
		}
		samples++
	}
	var notes []string
	if len(failed) > 0 {
		notes = append(notes, fmt.Sprintf("%s failed and were not counted (the first: %v)", count(len(failed), "Lock+Unlock"), failed[0]))
	}
	if relockCut {
		notes = append(notes, fmt.Sprintf("a loader's Lock+Unlock of the key, just before a fresh Client's, was cut short after %v", rn.o.ScaleFreshTimeout))
	}
	if cut > 0 {
		notes = append(notes, fmt.Sprintf("a first Lock+Unlock was cut short after %v (shown as ≥)", rn.o.ScaleFreshTimeout))
	}
	if samples < rn.o.ScaleFresh {
		notes = append(notes, fmt.Sprintf("%d fresh Clients, not %d", samples, rn.o.ScaleFresh))
		if cut == 0 && !relockCut && len(failed) < maxFailed {
			notes[len(notes)-1] += fmt.Sprintf(": the budget of %v was spent", rn.o.ScaleFreshBudget)
		}
	}
	note := strings.Join(notes, "; ")
	// The loader's Lock+Unlock just before each fresh Client's: a Lock of
	// a used key by a Client that is not fresh, with a bound when one was
	// cut short.
	if relockCut {
		relocks = append(relocks, limit)
	}
	if len(relocks) > 0 {
		if v := Percentile(relocks, 50); v >= limit {
			rn.r.atLeast(Scale, param, scaleRelockP50, "ms", v, note)
		} else {
			rn.r.add(Scale, param, scaleRelockP50, "ms", []float64{v}, note)
		}
	}
	if samples == 0 {
		rn.r.na(Scale, param, scaleFirstP50, "ms", note)
		rn.logf("%s: scale %s: no first Lock+Unlock measured: %s", rn.d.Name(), param, note)
		return nil
	}
	k := float64(samples)
	for _, f := range []struct {
		metric string
		p      float64
	}{{scaleFirstP50, 50}, {scaleFirstP99, 99}} {
		if v := Percentile(lat, f.p); v >= limit {
			rn.r.atLeast(Scale, param, f.metric, "ms", v, note)
		} else {
			rn.r.add(Scale, param, f.metric, "ms", []float64{v}, note)
		}
	}
	rn.r.add(Scale, param, scaleFirstCmds, "cmds", []float64{float64(total) / k}, note)
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		rn.r.add(Scale, param, fmt.Sprintf(scaleFirstName, name), "cmds", []float64{float64(byName[name]) / k}, note)
	}
	if cpuOK {
		rn.r.add(Scale, param, scaleFirstCPU, "ms", []float64{ms(int64(cpu)) / k}, note)
	}
	otherTotal := int64(0)
	for _, name := range slices.Sorted(maps.Keys(otherNames)) {
		otherTotal += otherNames[name]
		rn.r.add(Scale, param, fmt.Sprintf(scaleOtherName, name), "cmds", []float64{float64(otherNames[name]) / k}, note)
	}
	rn.r.add(Scale, param, scaleOtherCmds, "cmds", []float64{float64(otherTotal) / k}, note)
	relock := ""
	if len(relocks) > 0 {
		relock = fmt.Sprintf(", the loader's Lock+Unlock before it p50 %.1f ms", Percentile(relocks, 50))
	}
	rn.logf("%s: scale %s: first Lock+Unlock p50 %.1f ms, p99 %.1f ms, %.1f commands (%d fresh Clients)%s; meanwhile the loaders sent %.1f commands (%v)",
		rn.d.Name(), param, Percentile(lat, 50), Percentile(lat, 99), float64(total)/k, samples, relock,
		float64(otherTotal)/k, otherNames)
	return nil
}

// statusPage times the driver's status page, if it has one.
func (rn *runner) statusPage(ctx context.Context, ns, param string) {
	metric := fmt.Sprintf("%s of %d keys", scaleStatus, rn.o.ScaleStatusLimit)
	sp, ok := rn.d.(StatusPager)
	if !ok {
		rn.r.lackFigure(Scale, param, metric, "ms", rn.why(ScaleStatusPage, "the library has no status page"))
		return
	}
	took, how, timedOut, err := sp.StatusPage(ctx, ns, rn.o.ScaleStatusLimit, rn.o.ScaleStatusTimeout)
	switch {
	case err != nil:
		rn.r.na(Scale, param, metric, "ms", fmt.Sprintf("failed: %v (%s)", err, how))
	case timedOut:
		rn.r.atLeast(Scale, param, metric, "ms", ms(int64(rn.o.ScaleStatusTimeout)), fmt.Sprintf("%s: timed out after %v", how, rn.o.ScaleStatusTimeout))
	default:
		rn.r.add(Scale, param, metric, "ms", []float64{ms(int64(took))}, how)
	}
	rn.logf("%s: scale %s: %s: %v (timed out: %v, err %v)", rn.d.Name(), param, how, took.Round(time.Millisecond), timedOut, err)
}

// packing returns how many Clients each child process runs for a holder
// and w waiters: the holder alone, the waiters one to a process up to
// procs processes, packed evenly beyond.
func packing(w, procs int) []int {
	per := 1
	if procs > 0 && w > procs {
		per = (w + procs - 1) / procs
	}
	clients := []int{1}
	for left := w; left > 0; left -= per {
		clients = append(clients, min(per, left))
	}
	return clients
}

// scaleWaiters: one Client holds, w wait; handoffs, then what the waiters
// send while they wait.
func (rn *runner) scaleWaiters(ctx context.Context, w int) error {
	ns := rn.ns("scalew")
	rn.dropLater(ns)
	clients := packing(w, rn.o.ScaleProcs)
	param := scaleWaitersParam(w)
	note := ""
	if len(clients)-1 < w {
		note = fmt.Sprintf("%d waiting Clients in %d processes (up to %d in each)", w, len(clients)-1, clients[1])
	}
	// The collections are created by one Client before the others start
	// (FerretDB's SQLite backend does not always survive several Clients
	// creating one collection at once).
	if c, err := rn.d.Connect(ctx, NewMeter(), ns); err == nil {
		err = loadKey(ctx, c, 0)
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("creating the namespace: %w", err)
		}
	}
	g, err := spawnPacked(ctx, clients, childSpec{NS: ns, Key: "k", TTL: DefaultTTL})
	if err != nil {
		return err
	}
	defer g.close()
	const timeout = 2 * time.Minute
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, timeout); err != nil {
		return err
	}
	for i := 1; i <= w; i++ {
		g.send(i, "lock")
	}
	time.Sleep(time.Second) // let the waiters start waiting

	holder := 0
	var p50, p99 []float64
	doubles := 0
	var handoffErr error
	for run := range rn.o.ScaleRuns {
		s, d, h, err := rn.chainOn(ctx, g, holder, rn.o.Handoffs)
		doubles += d
		holder = h
		if err != nil {
			// The waiters still wait: they are counted all the same.
			handoffErr = fmt.Errorf("handoffs: %w", err)
			rn.logf("%s: scale %s: %v", rn.d.Name(), param, handoffErr)
			break
		}
		p50, p99 = append(p50, Percentile(s, 50)), append(p99, Percentile(s, 99))
		rn.logf("%s: scale %s: handoff run %d: p50 %.1f ms, p99 %.1f ms", rn.d.Name(), param, run+1, p50[run], p99[run])
	}
	hnote := note
	if doubles > 0 {
		hnote = strings.TrimPrefix(hnote+fmt.Sprintf("; %s while another process held", count(doubles, "acquisition")), "; ")
	}
	if handoffErr != nil {
		hnote = strings.TrimPrefix(hnote+"; failed: "+handoffErr.Error(), "; ")
		rn.r.na(Scale, param, scaleHandoffP50, "ms", hnote)
		rn.r.na(Scale, param, scaleHandoffP99, "ms", hnote)
	} else {
		rn.r.add(Scale, param, scaleHandoffP50, "ms", p50, hnote)
		rn.r.add(Scale, param, scaleHandoffP99, "ms", p99, hnote)
	}

	// Idle: the waiters settle (a waiter looks again at doubling intervals
	// for a second after it announces itself), then are counted.
	time.Sleep(2 * time.Second)
	var per, bytes, cpu, held []float64
	rates := map[string][]float64{}
	for run := range rn.o.ScaleRuns {
		a, err := rn.names(ctx, g)
		if err != nil {
			return err
		}
		cpu0, cpuOK := ProcessCPU(rn.o.ServerPID)
		time.Sleep(rn.o.ScaleIdleWindow)
		cpu1, cpuOK1 := ProcessCPU(rn.o.ServerPID)
		b, err := rn.names(ctx, g)
		if err != nil {
			return err
		}
		if cpuOK && cpuOK1 {
			cpu = append(cpu, 100*(cpu1-cpu0).Seconds()/rn.o.ScaleIdleWindow.Seconds())
		}
		var sum, sumBytes float64
		byName := map[string]float64{}
		for i := range b {
			secs := float64(b[i].mono-a[i].mono) / 1e9
			if i == holder {
				held = append(held, float64(b[i].commands-a[i].commands)/secs)
				continue
			}
			sum += float64(b[i].commands-a[i].commands) / secs
			sumBytes += float64(b[i].bytes-a[i].bytes) / secs
			for name, k := range b[i].byName {
				byName[name] += float64(k-a[i].byName[name]) / secs
			}
		}
		fw := float64(w)
		per, bytes = append(per, sum/fw), append(bytes, sumBytes/fw)
		for name := range rates {
			if _, ok := byName[name]; !ok {
				byName[name] = 0
			}
		}
		for name, r := range byName {
			for len(rates[name]) < run {
				rates[name] = append(rates[name], 0)
			}
			rates[name] = append(rates[name], r/fw)
		}
		rn.logf("%s: scale %s: idle run %d: %.3f cmds/s per waiter %v", rn.d.Name(), param, run+1, sum/fw, byName)
	}
	rn.r.add(Scale, param, scalePerWaiter, "cmds/s", per, note)
	for _, name := range slices.Sorted(maps.Keys(rates)) {
		if !slices.ContainsFunc(rates[name], func(r float64) bool { return r != 0 }) {
			continue // sent while setting up, not while waiting
		}
		rn.r.add(Scale, param, fmt.Sprintf(scaleByName, name), "cmds/s", rates[name], note)
	}
	rn.r.add(Scale, param, scaleBytes, "B/s", bytes, note)
	rn.r.add(Scale, param, scaleHolder, "cmds/s", held, note)
	if len(cpu) > 0 {
		rn.r.add(Scale, param, scaleServerCPU, "% of a core", cpu, note)
	}
	return handoffErr
}

// clientCounts is what one Client of a group sent so far.
type clientCounts struct {
	mono, commands, bytes int64
	byName                map[string]int64
}

// names asks every Client of g for its counts.
func (rn *runner) names(ctx context.Context, g *group) ([]clientCounts, error) {
	for i := range g.at {
		g.send(i, "names")
	}
	out := make([]clientCounts, len(g.at))
	for range g.at {
		m, err := g.wait(ctx, "names", -1, time.Minute)
		if err != nil {
			return nil, err
		}
		if len(m.args) < 4 {
			return nil, fmt.Errorf("process %d: bad names reply %q", m.proc, m.text)
		}
		c := clientCounts{mono: m.args[0], commands: m.args[1], bytes: m.args[2] + m.args[3], byName: map[string]int64{}}
		f := strings.Fields(m.text)
		for j := 5; j+1 < len(f); j += 2 {
			k, err := strconv.ParseInt(f[j+1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("process %d: bad names reply %q", m.proc, m.text)
			}
			c.byName[strings.ReplaceAll(f[j], "_", " ")] = k
		}
		out[m.proc] = c
	}
	return out, nil
}
