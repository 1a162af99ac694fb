package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// firstLocks measures fresh Clients' first Lock+Unlock of random keys
// among the first n of series s, one Client at a time: each timed from
// its connection to the return of its Unlock. In a series with relock, a
// loader locks and unlocks the key just before (not timed). What the
// other Clients (loaders, whose meters are others) send to the server
// during those Lock+Unlocks is counted too, by command: their background
// work shares the server with the fresh Client (a getMore of their event
// streams is counted when it returns, most after waiting seconds).
func (rn *runner) firstLocks(ctx context.Context, s *keySeries, n int, param string, others []*Meter) error {
	fs := &freshSamples{byName: map[string]int64{}, otherNames: map[string]int64{}, cpuOK: true}
	start := time.Now()
	for fs.samples < rn.o.ScaleFresh && fs.cut == 0 && !fs.relockCut && len(fs.failed) < maxFreshFailed {
		if fs.samples >= 3 && time.Since(start) > rn.o.ScaleFreshBudget {
			break
		}
		key := rand.N(n)
		if s.relock {
			if ok, err := rn.relockBefore(ctx, s, key, param, fs); err != nil {
				return err
			} else if !ok {
				continue
			}
		}
		if err := rn.freshLock(ctx, s, key, param, others, fs); err != nil {
			return err
		}
	}
	note := rn.freshNote(fs)
	rn.reportRelocks(param, fs, note)
	if fs.samples == 0 {
		rn.r.na(Scale, param, scaleFirstP50, "ms", note)
		rn.logf("%s: scale %s: no first Lock+Unlock measured: %s", rn.d.Name(), param, note)
		return nil
	}
	rn.reportFirstLocks(param, fs, note)
	return nil
}

// maxFreshFailed is how many fresh Clients' Lock+Unlock may fail at one
// size before firstLocks gives up: FerretDB's SQLite backend interrupts a
// command now and then on a busy machine.
const maxFreshFailed = 3

// freshSamples are what firstLocks measured at one size.
type freshSamples struct {
	lat     []float64 // each fresh Client's Lock+Unlock, ms; the timeout for one cut short
	relocks []float64 // the loader's Lock+Unlock of the key just before, ms
	// byName and total: the fresh Clients' commands; otherNames: the
	// other Clients' meanwhile; by command name.
	byName     map[string]int64
	total      int64
	otherNames map[string]int64
	cpu        time.Duration // the server's, over the fresh Clients' Lock+Unlocks
	cpuOK      bool          // cpu could be read at each
	samples    int
	cut        int  // fresh Lock+Unlocks cut short at ScaleFreshTimeout
	relockCut  bool // the loader's Lock+Unlock before was cut short
	// failed: fresh Clients whose Lock+Unlock failed, not counted as
	// samples.
	failed []error
}

// relockBefore has a loader of s lock and unlock key, just before a fresh
// Client does, and times it. ok is false if it failed (the failure is in
// fs) or was cut short (fs.relockCut); err is ctx's end.
func (rn *runner) relockBefore(ctx context.Context, s *keySeries, key int, param string, fs *freshSamples) (ok bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, rn.o.ScaleFreshTimeout)
	a := Mono()
	err = loadKey(rctx, s.loaders[0], key)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return false, err
	case err != nil && !errors.Is(err, context.DeadlineExceeded):
		fs.failed = append(fs.failed, fmt.Errorf("the loader's Lock+Unlock before: %w", err))
		rn.logf("%s: scale %s: %v", rn.d.Name(), param, fs.failed[len(fs.failed)-1])
		return false, nil
	case err != nil:
		fs.relockCut = true
		return false, nil
	}
	fs.relocks = append(fs.relocks, ms(Mono()-a))
	return true, nil
}

// freshLock times one fresh Client's first Lock+Unlock of key in s, and
// counts its commands, the server's CPU, and what the other Clients (their
// meters are others) sent meanwhile. A failure that is not ctx's end is
// recorded in fs, not returned.
func (rn *runner) freshLock(ctx context.Context, s *keySeries, key int, param string, others []*Meter, fs *freshSamples) error {
	m := NewMeter()
	for _, o := range others {
		o.Record()
	}
	cpu0, ok0 := ProcessCPU(rn.o.ServerPID)
	took, err := rn.firstLock(ctx, m, s.ns, key)
	cpu1, ok1 := ProcessCPU(rn.o.ServerPID)
	var meanwhile []Event
	for _, o := range others {
		meanwhile = append(meanwhile, o.Stop()...)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil && !errors.Is(err, context.DeadlineExceeded):
		fs.failed = append(fs.failed, err)
		rn.logf("%s: scale %s: a fresh Client's Lock+Unlock: %v", rn.d.Name(), param, err)
		return nil
	case err != nil:
		fs.cut++ // this size is past the timeout: no more samples
		fs.lat = append(fs.lat, ms(int64(rn.o.ScaleFreshTimeout)))
	default:
		fs.lat = append(fs.lat, ms(took))
	}
	fs.cpu += cpu1 - cpu0
	fs.cpuOK = fs.cpuOK && ok0 && ok1
	for name, k := range m.ByName() {
		fs.byName[name] += k
		fs.total += k
	}
	for _, e := range meanwhile {
		fs.otherNames[e.Name]++
	}
	fs.samples++
	return nil
}

// firstLock connects a fresh Client (metered by m) to namespace ns and
// locks and unlocks key; it returns how long that took, from the new
// connection to Unlock's return.
func (rn *runner) firstLock(ctx context.Context, m *Meter, ns string, key int) (int64, error) {
	// A Lock retries what fails; one that cannot finish (every read of a
	// first Lock times out, say) is cut short.
	lctx, cancel := context.WithTimeout(ctx, rn.o.ScaleFreshTimeout)
	defer cancel()
	a := Mono()
	c, err := rn.d.Connect(lctx, m, ns)
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
}

// freshNote says what kept the figures of one size from being whole:
// failures, Lock+Unlocks cut short, fewer fresh Clients than asked for.
func (rn *runner) freshNote(fs *freshSamples) string {
	var notes []string
	if len(fs.failed) > 0 {
		notes = append(notes, fmt.Sprintf("%s failed and were not counted (the first: %v)", count(len(fs.failed), "Lock+Unlock"), fs.failed[0]))
	}
	if fs.relockCut {
		notes = append(notes, fmt.Sprintf("a loader's Lock+Unlock of the key, just before a fresh Client's, was cut short after %v", rn.o.ScaleFreshTimeout))
	}
	if fs.cut > 0 {
		notes = append(notes, fmt.Sprintf("a first Lock+Unlock was cut short after %v (shown as ≥)", rn.o.ScaleFreshTimeout))
	}
	if fs.samples < rn.o.ScaleFresh {
		notes = append(notes, fmt.Sprintf("%d fresh Clients, not %d", fs.samples, rn.o.ScaleFresh))
		if fs.cut == 0 && !fs.relockCut && len(fs.failed) < maxFreshFailed {
			notes[len(notes)-1] += fmt.Sprintf(": the budget of %v was spent", rn.o.ScaleFreshBudget)
		}
	}
	return strings.Join(notes, "; ")
}

// reportRelocks adds the figure of the loader's Lock+Unlock just before
// each fresh Client's: a Lock of a used key by a Client that is not
// fresh, with a bound when one was cut short (then in fs.relocks too).
func (rn *runner) reportRelocks(param string, fs *freshSamples, note string) {
	limit := ms(int64(rn.o.ScaleFreshTimeout))
	if fs.relockCut {
		fs.relocks = append(fs.relocks, limit)
	}
	if len(fs.relocks) == 0 {
		return
	}
	if v := Percentile(fs.relocks, 50); v >= limit {
		rn.r.atLeast(Scale, param, scaleRelockP50, "ms", v, note)
	} else {
		rn.r.add(Scale, param, scaleRelockP50, "ms", []float64{v}, note)
	}
}

// reportFirstLocks adds the figures of the fresh Clients' first
// Lock+Unlock (at least one): its latency, bounded where one was cut
// short, and per Lock+Unlock its commands, the server's CPU, and the
// other Clients' commands meanwhile.
func (rn *runner) reportFirstLocks(param string, fs *freshSamples, note string) {
	limit := ms(int64(rn.o.ScaleFreshTimeout))
	k := float64(fs.samples)
	for _, f := range []struct {
		metric string
		p      float64
	}{{scaleFirstP50, 50}, {scaleFirstP99, 99}} {
		if v := Percentile(fs.lat, f.p); v >= limit {
			rn.r.atLeast(Scale, param, f.metric, "ms", v, note)
		} else {
			rn.r.add(Scale, param, f.metric, "ms", []float64{v}, note)
		}
	}
	rn.r.add(Scale, param, scaleFirstCmds, "cmds", []float64{float64(fs.total) / k}, note)
	for _, name := range slices.Sorted(maps.Keys(fs.byName)) {
		rn.r.add(Scale, param, fmt.Sprintf(scaleFirstName, name), "cmds", []float64{float64(fs.byName[name]) / k}, note)
	}
	if fs.cpuOK {
		rn.r.add(Scale, param, scaleFirstCPU, "ms", []float64{ms(int64(fs.cpu)) / k}, note)
	}
	otherTotal := int64(0)
	for _, name := range slices.Sorted(maps.Keys(fs.otherNames)) {
		otherTotal += fs.otherNames[name]
		rn.r.add(Scale, param, fmt.Sprintf(scaleOtherName, name), "cmds", []float64{float64(fs.otherNames[name]) / k}, note)
	}
	rn.r.add(Scale, param, scaleOtherCmds, "cmds", []float64{float64(otherTotal) / k}, note)
	relock := ""
	if len(fs.relocks) > 0 {
		relock = fmt.Sprintf(", the loader's Lock+Unlock before it p50 %.1f ms", Percentile(fs.relocks, 50))
	}
	rn.logf("%s: scale %s: first Lock+Unlock p50 %.1f ms, p99 %.1f ms, %.1f commands (%d fresh Clients)%s; meanwhile the loaders sent %.1f commands (%v)",
		rn.d.Name(), param, Percentile(fs.lat, 50), Percentile(fs.lat, 99), float64(fs.total)/k, fs.samples, relock,
		float64(otherTotal)/k, fs.otherNames)
}
