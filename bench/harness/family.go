package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The scenarios of the rest of the sync family (issue 26): a reader/writer
// lock's read side, a counting semaphore, and a Once. A library without
// the primitive is recorded as lacking it (Report.Lacks), with the
// driver's reason where it gives one (Lacker): RESULTS.md shows "—".

// Optional Conn interfaces of the family scenarios.
type (
	// RWMutexes is a Conn of a library with a reader/writer lock.
	RWMutexes interface {
		NewRWMutex(key string, ttl time.Duration) (RWLocker, error)
	}
	// An RWLocker is the read side of a reader/writer lock (the
	// scenarios measure readers only).
	RWLocker interface {
		RLock(ctx context.Context) error
		RUnlock(ctx context.Context) error
	}

	// Semaphores is a Conn of a library with a counting semaphore.
	Semaphores interface {
		NewSemaphore(key string, limit int64, ttl time.Duration) (Semaphore, error)
	}
	// A Semaphore is a counting semaphore of limit units.
	Semaphore interface {
		Acquire(ctx context.Context, n int64) error
		Release(ctx context.Context, n int64) error
	}

	// Onces is a Conn of a library with a Once shared by processes.
	Onces interface {
		NewOnce(key string) (Once, error)
	}
	// A Once runs f to success once per key, in whichever process gets
	// there first; the others wait for it.
	Once interface {
		Do(ctx context.Context, f func(context.Context) error) error
	}

	// A Lacker is a Driver that explains why it lacks the primitive of a
	// family scenario (RWMutexScenario, SemaphoreScenario, OnceScenario):
	// what the library offers instead, "" for no explanation.
	Lacker interface {
		Lacks(scenario string) string
	}
)

// lacking records that the library under test has no primitive for
// scenario, unless its Conn implements it (has reports that); it reports
// whether it did.
func (rn *runner) lacking(ctx context.Context, scenario string, has func(Conn) bool) (bool, error) {
	c, err := rn.d.Connect(ctx, NewMeter(), rn.ns("probe"))
	if err != nil {
		return false, err
	}
	ok := has(c)
	_ = c.Close()
	if ok {
		return false, nil
	}
	why := map[string]string{
		RWMutexScenario:   "no reader/writer lock in this library",
		SemaphoreScenario: "no semaphore in this library",
		OnceScenario:      "no Once in this library",
		PartitionScenario: "no partitioned election (sharded singleton) in this library",
		LockSetScenario:   "no lock sets (several keys held all or nothing) in this library",
	}[scenario]
	if l, ok := rn.d.(Lacker); ok {
		if s := l.Lacks(scenario); s != "" {
			why = s
		}
	}
	rn.r.lack(scenario, why)
	rn.logf("%s: %s: %s", rn.d.Name(), scenario, why)
	return true, nil
}

// rwmutex: n processes, each with the same reader/writer lock, take and
// release the read side as fast as they can.
func (rn *runner) rwmutex(ctx context.Context) error {
	if lacks, err := rn.lacking(ctx, RWMutexScenario, func(c Conn) bool { _, ok := c.(RWMutexes); return ok }); lacks || err != nil {
		return err
	}
	var errs []error
	for _, n := range rn.o.Readers {
		if err := rn.readers(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", count(n, "reading process"), err))
		}
	}
	for _, n := range rn.o.Live {
		if err := rn.rwLive(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", count(n, "live reader"), err))
		}
	}
	return errors.Join(errs...)
}

func (rn *runner) readers(ctx context.Context, n int) error {
	ns := rn.ns("rw")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n, childSpec{NS: ns, Key: "k", Kind: kindRead, TTL: DefaultTTL})
	if err != nil {
		return err
	}
	defer g.close()
	param := count(n, "reading process") + ", one key"
	var rates, cmds []float64
	for run := range rn.o.Runs {
		holds, sent, err := rn.loops(ctx, g, n)
		if err != nil {
			return err
		}
		var total, cycles, commands float64
		for i := range n {
			total, cycles, commands = total+holds[i], cycles+holds[i]+1, commands+sent[i]
		}
		rates = append(rates, total/rn.o.ThroughputFor.Seconds())
		cmds = append(cmds, commands/cycles)
		rn.logf("%s: rwmutex %s run %d: %.1f RLock+RUnlock/s, %.2f cmds each", rn.d.Name(), param, run+1, rates[run], cmds[run])
	}
	rn.r.add(RWMutexScenario, param, "RLock+RUnlock/s, all processes", "holds/s", rates, "")
	rn.r.add(RWMutexScenario, param, "commands per RLock+RUnlock", "cmds", cmds, "")
	return nil
}

// loops has the n Clients of g take and release their lock as fast as
// they can for ThroughputFor, from a common start. It returns, per Client,
// the holds begun in that time and the commands sent over all its cycles
// (one more than its holds: the last one ends after the time).
func (rn *runner) loops(ctx context.Context, g *group, n int) (holds, cmds []float64, err error) {
	start := Mono() + int64(300*time.Millisecond)
	until := start + int64(rn.o.ThroughputFor)
	for i := range n {
		g.send(i, "loop", start, until)
	}
	holds, cmds = make([]float64, n), make([]float64, n)
	for range n {
		m, err := g.wait(ctx, "loopdone", -1, rn.o.ThroughputFor+2*time.Minute)
		if err != nil {
			return nil, nil, err
		}
		holds[m.proc], cmds[m.proc] = float64(m.args[0]), float64(m.args[1])
	}
	return holds, cmds, nil
}

// semaphore: one process acquires and releases a unit of a semaphore
// nobody else uses; then a full semaphore's unit passes from process to
// process.
func (rn *runner) semaphore(ctx context.Context) error {
	if lacks, err := rn.lacking(ctx, SemaphoreScenario, func(c Conn) bool { _, ok := c.(Semaphores); return ok }); lacks || err != nil {
		return err
	}
	err := rn.semaphoreUncontended(ctx)
	for _, n := range rn.o.SemWaiters {
		if e := rn.semaphoreHandoffs(ctx, n); e != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", count(n, "waiting process"), e))
		}
	}
	for _, n := range rn.o.Live {
		if e := rn.semLive(ctx, n); e != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", count(n, "live unit"), e))
		}
	}
	return err
}

func (rn *runner) semaphoreUncontended(ctx context.Context) error {
	m := NewMeter()
	conn, done, err := rn.connect(ctx, m, rn.ns("sem"))
	if err != nil {
		return err
	}
	defer done()
	s, err := conn.(Semaphores).NewSemaphore("k", rn.o.SemLimit, DefaultTTL)
	if err != nil {
		return err
	}
	st, err := rn.timedCycles(ctx, m, "semaphore uncontended",
		func(ctx context.Context) error { return s.Acquire(ctx, 1) },
		func(ctx context.Context) error { return s.Release(ctx, 1) })
	if err != nil {
		return err
	}
	param := fmt.Sprintf("limit %d, one process", rn.o.SemLimit)
	rn.r.add(SemaphoreScenario, param, "commands per Acquire(1)+Release(1) (steady state)", "cmds", st.cmds, "")
	rn.r.add(SemaphoreScenario, param, "bytes on the wire per Acquire(1)+Release(1)", "B", st.bytes, "")
	rn.r.add(SemaphoreScenario, param, "Acquire(1)+Release(1) p50", "ms", st.p50, "")
	rn.r.add(SemaphoreScenario, param, "Acquire(1)+Release(1) p99", "ms", st.p99, "")
	rn.r.add(SemaphoreScenario, param, "Acquire(1) p50", "ms", st.stepP50[0], "")
	rn.r.add(SemaphoreScenario, param, "Release(1) p50", "ms", st.stepP50[1], "")
	return nil
}

// semaphoreHandoffs: a semaphore of SemLimit units, all held: one process
// keeps SemLimit−1 of them for the whole run, another holds the last, and
// n processes wait in Acquire(1). The holder releases its unit after a
// random hold; the time from the start of Release to the return of the
// next Acquire, as in Handoff; the former holder then waits again.
func (rn *runner) semaphoreHandoffs(ctx context.Context, n int) error {
	param := fmt.Sprintf("limit %d, full, %s", rn.o.SemLimit, count(n, "waiting process"))
	var p50, p99 []float64
	overs := 0
	var failed error
	for run := range rn.o.Runs {
		s, o, err := rn.semaphoreChain(ctx, n)
		overs += o
		if err != nil {
			failed = err
			break
		}
		p50, p99 = append(p50, Percentile(s, 50)), append(p99, Percentile(s, 99))
		rn.logf("%s: semaphore %s run %d: p50 %.1f ms, p99 %.1f ms", rn.d.Name(), param, run+1, p50[run], p99[run])
	}
	note := ""
	if failed != nil {
		note = "failed: " + failed.Error()
	}
	if overs > 0 {
		note = joinNotes(note, fmt.Sprintf("%s beyond the limit", count(overs, "acquisition")))
	}
	rn.r.add(SemaphoreScenario, param, "Release→Acquire p50", "ms", p50, note)
	rn.r.add(SemaphoreScenario, param, "Release→Acquire p99", "ms", p99, note)
	return failed
}

func (rn *runner) semaphoreChain(ctx context.Context, n int) ([]float64, int, error) {
	ns := rn.ns("semchain")
	defer rn.drop(ctx, ns)
	// Client 0 keeps limit−1 units; 1 holds the last one first.
	g, err := spawn(ctx, n+2, childSpec{NS: ns, Key: "k", Kind: kindSemaphore, Limit: rn.o.SemLimit, TTL: DefaultTTL})
	if err != nil {
		return nil, 0, err
	}
	defer g.close()
	const timeout = 2 * time.Minute
	for range rn.o.SemLimit - 1 {
		g.send(0, "lock")
		if _, err := g.wait(ctx, "acquired", 0, timeout); err != nil {
			return nil, 0, err
		}
	}
	g.send(1, "lock")
	if _, err := g.wait(ctx, "acquired", 1, timeout); err != nil {
		return nil, 0, err
	}
	for i := 2; i < n+2; i++ {
		g.send(i, "lock")
	}
	time.Sleep(time.Second) // let the waiters start waiting
	samples, overs, _, err := rn.chainOn(ctx, g, 1, rn.o.Handoffs)
	return samples, overs, err
}

// once: processes race Do on a fresh key; then Do on a key already done.
func (rn *runner) once(ctx context.Context) error {
	if lacks, err := rn.lacking(ctx, OnceScenario, func(c Conn) bool { _, ok := c.(Onces); return ok }); lacks || err != nil {
		return err
	}
	return errors.Join(rn.onceRaces(ctx), rn.onceDone(ctx))
}

// onceRaces: OnceProcs processes call Do on a fresh key at the same
// moment, OnceRaces keys per run. Per race: the time from the common
// start until the last Do returned, how many ran f, and the commands all
// of them sent during their Do.
func (rn *runner) onceRaces(ctx context.Context) error {
	n := rn.o.OnceProcs
	ns := rn.ns("once")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n, childSpec{NS: ns, Kind: kindOnce, TTL: DefaultTTL})
	if err != nil {
		return err
	}
	defer g.close()
	param := fmt.Sprintf("%s racing, fresh key", count(n, "process"))
	var p50, p99, cmds, runsMax []float64
	wrong := 0
	for run := range rn.o.Runs {
		var took, sent []float64
		most := 0
		for race := range rn.o.OnceRaces {
			key := fmt.Sprintf("job-%d-%d", run, race)
			start := Mono() + int64(100*time.Millisecond)
			for i := range n {
				g.send(i, "do", key, start)
			}
			var last int64
			ran, total := 0, 0.0
			for range n {
				m, err := g.wait(ctx, "did", -1, 2*time.Minute)
				if err != nil {
					return err
				}
				ran += int(m.args[0])
				last = max(last, m.args[1])
				total += float64(m.args[2])
			}
			if ran != 1 {
				wrong++
			}
			most = max(most, ran)
			took, sent = append(took, ms(last-start)), append(sent, total)
		}
		p50, p99 = append(p50, Percentile(took, 50)), append(p99, Percentile(took, 99))
		cmds, runsMax = append(cmds, Median(sent)), append(runsMax, float64(most))
		rn.logf("%s: once race run %d: all returned p50 %.1f ms, p99 %.1f ms; %.0f cmds; f ran at most %d times per key",
			rn.d.Name(), run+1, p50[run], p99[run], cmds[run], most)
	}
	note := ""
	if wrong > 0 {
		note = fmt.Sprintf("%s of %d where f did not run exactly once", count(wrong, "key"), rn.o.Runs*rn.o.OnceRaces)
	}
	rn.r.add(OnceScenario, param, "start→all Do returned p50", "ms", p50, note)
	rn.r.add(OnceScenario, param, "start→all Do returned p99", "ms", p99, note)
	rn.r.add(OnceScenario, param, "runs of f per key, most (must be 1)", "runs", []float64{slices.Max(runsMax)}, note)
	rn.r.add(OnceScenario, param, "commands per race, all processes", "cmds", cmds, note)
	return nil
}

// onceDone: Do on a key done earlier, by a new Once each time (a process
// starting up: a Once that saw the record answers from memory).
func (rn *runner) onceDone(ctx context.Context) error {
	m := NewMeter()
	conn, done, err := rn.connect(ctx, m, rn.ns("oncedone"))
	if err != nil {
		return err
	}
	defer done()
	onces := conn.(Onces)
	first, err := onces.NewOnce("migration")
	if err != nil {
		return err
	}
	if err := first.Do(ctx, func(context.Context) error { return nil }); err != nil {
		return err
	}
	ran := 0
	st, err := rn.timedCycles(ctx, m, "once done", func(ctx context.Context) error {
		o, err := onces.NewOnce("migration")
		if err != nil {
			return err
		}
		return o.Do(ctx, func(context.Context) error { ran++; return nil })
	})
	if err != nil {
		return err
	}
	note := ""
	if ran > 0 {
		note = fmt.Sprintf("f ran %s on a done key", count(ran, "time"))
	}
	param := "done key, a new Once each time"
	rn.r.add(OnceScenario, param, "commands per Do", "cmds", st.cmds, note)
	rn.r.add(OnceScenario, param, "Do p50", "ms", st.p50, note)
	rn.r.add(OnceScenario, param, "Do p99", "ms", st.p99, note)
	return nil
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
