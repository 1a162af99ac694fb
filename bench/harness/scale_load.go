package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// loadSeries grows series s to n keys, unless that would take longer than
// ScaleLoadBudget (then s stops: its sizes from n on are not measured).
func (rn *runner) loadSeries(ctx context.Context, s *keySeries, n int) error {
	if n <= s.loaded || s.stopped != "" {
		return nil
	}
	budget := rn.o.ScaleLoadBudget
	keys := n - s.loaded
	if why := rn.wontLoad(s, n); why != "" {
		s.stopped = why
		rn.logf("%s: scale: %s: %d keys %s", rn.d.Name(), s.name, n, s.stopped)
		return nil
	}
	param := scaleKeysParam(n, s.name)
	before := commandsBy(s.meters)
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
	sent := commandsBy(s.meters)
	for name, k := range before {
		sent[name] -= k
	}
	var total int64
	for _, k := range sent {
		total += k
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

// wontLoad says why series s is not grown to n keys: past ScaleKeptMax
// (the series of keys in the collection), or a loading estimated to take
// longer than ScaleLoadBudget; "" if it is.
func (rn *runner) wontLoad(s *keySeries, n int) string {
	if s.relock && rn.o.ScaleKeptMax > 0 && n > rn.o.ScaleKeptMax {
		return fmt.Sprintf("not measured: this run grew the series to %s keys at most (-scale-kept-max)", thousands(rn.o.ScaleKeptMax))
	}
	budget := rn.o.ScaleLoadBudget
	if est, ok := loadEstimate(s.loads, s.loaded, n); ok && est > budget {
		last := s.loads[len(s.loads)-1]
		return fmt.Sprintf("not measured: loading %d more keys would take about %v (%.0f keys/s from %s to %s keys), more than the %v allowed",
			n-s.loaded, est.Round(time.Minute), float64(last.to-last.from)/last.took.Seconds(), thousands(last.from), thousands(last.to), budget)
	}
	return ""
}

// commandsBy adds up what the meters counted, by command name.
func commandsBy(meters []*Meter) map[string]int64 {
	by := map[string]int64{}
	for _, m := range meters {
		for name, k := range m.ByName() {
			by[name] += k
		}
	}
	return by
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
