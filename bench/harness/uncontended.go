package harness

import (
	"context"
)

// uncontended: one process locks and unlocks one key, nobody else does.
func (rn *runner) uncontended(ctx context.Context) error {
	m := NewMeter()
	before := m.Snapshot()
	conn, done, err := rn.connect(ctx, m, rn.ns("unc"))
	if err != nil {
		return err
	}
	defer done()
	l, err := conn.NewMutex("k", DefaultTTL)
	if err != nil {
		return err
	}
	if err := l.Lock(ctx); err != nil {
		return err
	}
	if err := l.Unlock(ctx); err != nil {
		return err
	}
	first := m.Snapshot().Sub(before)
	rn.r.add(Uncontended, "", "commands, connecting and the first Lock+Unlock (setup included)", "cmds", []float64{float64(first.Commands)}, "")
	st, err := rn.timedCycles(ctx, m, "uncontended", l.Lock, l.Unlock)
	if err != nil {
		return err
	}
	rn.r.add(Uncontended, "", "commands per Lock+Unlock (steady state)", "cmds", st.cmds, "")
	rn.r.add(Uncontended, "", "bytes on the wire per Lock+Unlock", "B", st.bytes, "")
	rn.r.add(Uncontended, "", "Lock+Unlock p50", "ms", st.p50, "")
	rn.r.add(Uncontended, "", "Lock+Unlock p99", "ms", st.p99, "")
	rn.r.add(Uncontended, "", "Lock p50", "ms", st.stepP50[0], "")
	rn.r.add(Uncontended, "", "Unlock p50", "ms", st.stepP50[1], "")
	return nil
}

// cycleStats are what timedCycles measured, one value per run.
type cycleStats struct {
	p50, p99    []float64   // of a whole cycle, ms
	stepP50     [][]float64 // [step][run], ms
	cmds, bytes []float64   // per cycle, as m counted them
}

// timedCycles runs a cycle of steps (Lock then Unlock, say) 10 times to
// warm up, then Cycles times in each of Runs runs, and returns each run's
// latencies and counts. what names the cycles in the log.
func (rn *runner) timedCycles(ctx context.Context, m *Meter, what string, steps ...func(context.Context) error) (cycleStats, error) {
	took := make([]int64, len(steps))
	cycle := func() error {
		for i, step := range steps {
			a := Mono()
			if err := step(ctx); err != nil {
				return err
			}
			took[i] = Mono() - a
		}
		return nil
	}
	for range 10 {
		if err := cycle(); err != nil {
			return cycleStats{}, err
		}
	}
	st := cycleStats{stepP50: make([][]float64, len(steps))}
	for run := range rn.o.Runs {
		s := m.Snapshot()
		var cyc []float64
		perStep := make([][]float64, len(steps))
		for range rn.o.Cycles {
			if err := cycle(); err != nil {
				return cycleStats{}, err
			}
			var sum int64
			for i, t := range took {
				sum += t
				perStep[i] = append(perStep[i], ms(t))
			}
			cyc = append(cyc, ms(sum))
		}
		c := m.Snapshot().Sub(s)
		n := float64(rn.o.Cycles)
		st.p50, st.p99 = append(st.p50, Percentile(cyc, 50)), append(st.p99, Percentile(cyc, 99))
		for i := range steps {
			st.stepP50[i] = append(st.stepP50[i], Percentile(perStep[i], 50))
		}
		st.cmds, st.bytes = append(st.cmds, float64(c.Commands)/n), append(st.bytes, float64(c.BytesOut+c.BytesIn)/n)
		rn.logf("%s: %s run %d: p50 %.2f ms, p99 %.2f ms, %.2f cmds/cycle", rn.d.Name(), what, run+1, st.p50[run], st.p99[run], st.cmds[run])
	}
	return st, nil
}
