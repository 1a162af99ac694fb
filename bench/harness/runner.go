package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// runner runs the scenarios of one library.
type runner struct {
	d Driver
	o Options
	r *Report
	// dropLater, while the scale scenario runs, takes the namespaces it
	// drops at its end.
	dropLater func(ns string)
}

// Run runs the chosen scenarios against d and returns their figures. A
// scenario that fails records why and the others still run.
func Run(ctx context.Context, d Driver, o Options, base Options) *Report {
	o = o.withDefaults(base)
	start := time.Now()
	lib, server := d.Describe(ctx)
	rn := &runner{d: d, o: o, r: &Report{Lib: d.Name(), Library: lib, Server: server, Started: start.UTC().Truncate(time.Second), Machine: ThisMachine(), Options: o}}
	want := func(s string) bool { return o.Scenarios == nil || slices.Contains(o.Scenarios, s) }
	steps := []struct {
		name string
		f    func(context.Context) error
	}{
		// The floor first: the figures after it are read against it.
		{FloorScenario, rn.floor},
		{Uncontended, rn.uncontended},
		{Handoff, rn.handoffs},
		{Failover, rn.failovers},
		{Graceful, rn.graceful},
		{Idle, rn.idle},
		{Renewal, rn.renewal},
		{Throughput, rn.throughput},
		{Race, rn.race},
		{Scale, rn.scale},
		{RWMutexScenario, rn.rwmutex},
		{SemaphoreScenario, rn.semaphore},
		{OnceScenario, rn.once},
		{PartitionScenario, rn.partition},
		{TransferScenario, rn.transfer},
		{LockSetScenario, rn.lockset},
	}
	for _, s := range steps {
		if !want(s.name) {
			continue
		}
		t := time.Now()
		rn.r.markLoad(s.name)
		rn.logf("%s: %s ...", d.Name(), s.name)
		if err := s.f(ctx); err != nil {
			rn.logf("%s: %s failed: %v", d.Name(), s.name, err)
			rn.r.Notes = append(rn.r.Notes, fmt.Sprintf("%s: %v", s.name, err))
		}
		rn.logf("%s: %s done in %v", d.Name(), s.name, time.Since(t).Round(time.Millisecond))
	}
	rn.r.Took = Duration(time.Since(start))
	return rn.r
}

func (rn *runner) logf(format string, a ...any) {
	fmt.Fprintf(rn.o.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

// nsSeq numbers the namespaces of every run of this process, so that two
// runs at once (tests in parallel, on one database) never share one.
var nsSeq atomic.Int64

// ns returns a fresh namespace for one scenario run.
func (rn *runner) ns(what string) string {
	return fmt.Sprintf("b%x_%s%d", time.Now().Unix()&0xfffff, what, nsSeq.Add(1))
}

// drop removes what the processes of a run left in namespace ns.
func (rn *runner) drop(ctx context.Context, ns string) {
	c, err := rn.d.Connect(ctx, NewMeter(), ns)
	if err != nil {
		return
	}
	if dr, ok := c.(Dropper); ok {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = dr.Drop(dctx)
		cancel()
	}
	_ = c.Close()
}

func (rn *runner) connect(ctx context.Context, m *Meter, ns string) (Conn, func(), error) {
	c, err := rn.d.Connect(ctx, m, ns)
	if err != nil {
		return nil, nil, err
	}
	return c, func() {
		if dr, ok := c.(Dropper); ok {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_ = dr.Drop(dctx)
			cancel()
		}
		_ = c.Close()
	}, nil
}

// count returns "1 thing" or "n things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "s") {
		return fmt.Sprintf("%d %ses", n, thing)
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
