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
