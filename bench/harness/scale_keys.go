package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// scaleKeys grows each series' namespace to each size in turn and
// measures, at each, a fresh Client's first Lock+Unlock and a status page.
func (rn *runner) scaleKeys(ctx context.Context) error {
	series, compLacks := rn.keySeriesToRun()
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
			if err := rn.keysAt(ctx, s, n, series); err != nil {
				errs = append(errs, err)
			}
		}
		if compLacks != "" {
			param := scaleKeysParam(n, keysCompacted)
			rn.r.lackFigure(Scale, param, scaleFirstP50, "ms", compLacks)
			rn.r.lackFigure(Scale, param, scaleFirstP99, "ms", compLacks)
		}
	}
	return errors.Join(errs...)
}

// keySeriesToRun returns the series of idle keys this library runs, the
// compacted one first (its keys age, and are compacted, while the other
// loads), and why it has no compacted series ("" if it has).
func (rn *runner) keySeriesToRun() (series []*keySeries, compLacks string) {
	kept := &keySeries{name: keysKept, ns: rn.ns("scalekept"), relock: true}
	comp := &keySeries{name: keysCompacted, ns: rn.ns("scale")}
	compLacks = rn.why(ScaleCompaction, "the library compacts no idle keys")
	if ic, ok := rn.d.(IdleCompactor); ok {
		compLacks = ""
		ic.KeepIdle(kept.ns)
		comp.age = ic.CompactIdle(comp.ns)
	}
	if comp.age > 0 {
		series = append(series, comp)
	} else if compLacks == "" {
		rn.logf("%s: scale: no idle age given: the series %q is not measured", rn.d.Name(), keysCompacted)
	}
	return append(series, kept), compLacks
}

// keysAt measures series s at n keys (all is every series, whose loaders
// share the server): once compacted if it compacts, what the store keeps,
// a fresh Client's first Lock+Unlock, and the status page. A series that
// stopped short of n is recorded as not measured.
func (rn *runner) keysAt(ctx context.Context, s *keySeries, n int, all []*keySeries) error {
	param := scaleKeysParam(n, s.name)
	if s.stopped != "" {
		rn.r.na(Scale, param, scaleFirstP50, "ms", s.stopped)
		return nil
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
	if err := rn.firstLocks(ctx, s, n, param, others(all)); err != nil {
		rn.logf("%s: scale %s: first Lock+Unlock: %v", rn.d.Name(), param, err)
		return fmt.Errorf("%s, %d keys: %w", s.name, n, err)
	}
	rn.statusPage(ctx, s.ns, param)
	return nil
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
