package harness

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Live readers and units (issue 44): what one RLock+RUnlock, or one
// Acquire(1)+Release(1), costs while other processes hold the key's read
// side or units: L live claims in all, the measured one among them. A
// grant whose walk reads every live claim below it costs more commands
// as L grows; one that reads them in one request costs the same.

// liveHolders starts n Clients in child processes (packed as the scale
// scenario's waiters, beyond ScaleProcs processes) that each take the
// key once, as spec's Kind says, and keep it until the group is closed.
// It returns nil for n = 0.
func (rn *runner) liveHolders(ctx context.Context, spec childSpec, n int) (*group, error) {
	if n == 0 {
		return nil, nil
	}
	procs := max(rn.o.ScaleProcs, 1)
	per := (n + procs - 1) / procs
	var clients []int
	for left := n; left > 0; left -= per {
		clients = append(clients, min(per, left))
	}
	g, err := spawnPacked(ctx, clients, spec)
	if err != nil {
		return nil, err
	}
	for i := range n {
		g.send(i, "lock")
	}
	for range n {
		if _, err := g.wait(ctx, "acquired", -1, 2*time.Minute); err != nil {
			g.close()
			return nil, fmt.Errorf("%s holding: %w", count(n, "Client"), err)
		}
	}
	return g, nil
}

// liveCycles has live−1 Clients hold the key (spec), then one more Client
// cycle its two steps (made by steps from its Conn) as in Uncontended: it
// returns their figures.
func (rn *runner) liveCycles(ctx context.Context, spec childSpec, live int, what string,
	steps func(Conn) ([]func(context.Context) error, error)) (cycleStats, error) {
	defer rn.drop(ctx, spec.NS)
	if err := rn.createNamespace(ctx, spec.NS); err != nil {
		return cycleStats{}, err
	}
	g, err := rn.liveHolders(ctx, spec, live-1)
	if err != nil {
		return cycleStats{}, err
	}
	if g != nil {
		defer g.close()
	}
	m := NewMeter()
	c, err := rn.d.Connect(ctx, m, spec.NS)
	if err != nil {
		return cycleStats{}, err
	}
	defer func() { _ = c.Close() }()
	s, err := steps(c)
	if err != nil {
		return cycleStats{}, err
	}
	short := *rn // fewer cycles: with 64 live claims, a walk can take a second
	short.o.Cycles = liveCyclesOf(rn.o)
	return short.timedCycles(ctx, m, what, s...)
}

// liveCyclesOf is how many cycles per run the live rows time.
func liveCyclesOf(o Options) int { return min(o.Cycles, 50) }

// rwLive: the read side of one reader/writer lock, with live readers.
func (rn *runner) rwLive(ctx context.Context, live int) error {
	ns := rn.ns("rwlive")
	spec := childSpec{NS: ns, Key: "k", Kind: kindRead, TTL: DefaultTTL}
	param := count(live, "live reader") + ", one key"
	st, err := rn.liveCycles(ctx, spec, live, "rwmutex "+param, func(c Conn) ([]func(context.Context) error, error) {
		l, err := c.(RWMutexes).NewRWMutex("k", DefaultTTL)
		if err != nil {
			return nil, err
		}
		return []func(context.Context) error{l.RLock, l.RUnlock}, nil
	})
	if err != nil {
		return err
	}
	rn.r.add(RWMutexScenario, param, "one process's RLock+RUnlock p50 (the others hold)", "ms", st.p50, "")
	rn.r.add(RWMutexScenario, param, "commands per RLock+RUnlock, one process (the others hold)", "cmds", st.cmds, "")
	return nil
}

// semLive: one unit of a semaphore of liveLimit units, with live units
// held.
func (rn *runner) semLive(ctx context.Context, live int) error {
	ns := rn.ns("semlive")
	limit := rn.liveLimit()
	spec := childSpec{NS: ns, Key: "k", Kind: kindSemaphore, Limit: limit, TTL: DefaultTTL}
	param := fmt.Sprintf("limit %d, %s", limit, count(live, "live unit"))
	st, err := rn.liveCycles(ctx, spec, live, "semaphore "+param, func(c Conn) ([]func(context.Context) error, error) {
		s, err := c.(Semaphores).NewSemaphore("k", limit, DefaultTTL)
		if err != nil {
			return nil, err
		}
		return []func(context.Context) error{
			func(ctx context.Context) error { return s.Acquire(ctx, 1) },
			func(ctx context.Context) error { return s.Release(ctx, 1) },
		}, nil
	})
	if err != nil {
		return err
	}
	rn.r.add(SemaphoreScenario, param, "one process's Acquire(1)+Release(1) p50 (the others hold)", "ms", st.p50, "")
	rn.r.add(SemaphoreScenario, param, "commands per Acquire(1)+Release(1), one process (the others hold)", "cmds", st.cmds, "")
	return nil
}

// liveLimit is the semaphore's limit in semLive: room for the most live
// units measured.
func (rn *runner) liveLimit() int64 { return int64(liveMost(rn.o.Live)) }

// liveMost is the largest of live, at least 1.
func liveMost(live []int) int {
	most := 1
	for _, n := range live {
		most = max(most, n)
	}
	return most
}

// joinInts writes ns as "1, 4 and 16".
func joinInts(ns []int) string {
	var s string
	for i, n := range ns {
		switch {
		case i == 0:
		case i == len(ns)-1:
			s += " and "
		default:
			s += ", "
		}
		s += strconv.Itoa(n)
	}
	return s
}

// liveReadersText describes the live readers in the rwmutex scenario's
// text, if the figures have them (older reports do not).
func liveReadersText(o Options) string {
	if len(o.Live) == 0 {
		return ""
	}
	return fmt.Sprintf(" **Live readers**: L−1 Clients (in up to %d processes) take the read side and keep it, and one more "+
		"process takes and releases it %d times per run, as in Uncontended: its RLock+RUnlock p50 and commands per RLock+RUnlock "+
		"(L = %s).", o.ScaleProcs, liveCyclesOf(o), joinInts(o.Live))
}

// liveUnitsText describes the live units in the semaphore scenario's
// text, if the figures have them.
func liveUnitsText(o Options) string {
	if len(o.Live) == 0 {
		return ""
	}
	return fmt.Sprintf(" **Live units**: another semaphore, of %d units: L−1 Clients (in up to %d processes) acquire one "+
		"unit each and keep it, and one more process acquires and releases one unit %d times per run, as in Uncontended: its "+
		"Acquire(1)+Release(1) p50 and commands per Acquire(1)+Release(1) (L = %s).",
		liveMost(o.Live), o.ScaleProcs, liveCyclesOf(o), joinInts(o.Live))
}
