package harness

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
	if err := rn.createNamespace(ctx, ns); err != nil {
		return err
	}
	g, err := spawnPacked(ctx, clients, childSpec{NS: ns, Key: "k", TTL: DefaultTTL})
	if err != nil {
		return err
	}
	defer g.close()
	if err := startWaiting(ctx, g, w); err != nil {
		return err
	}
	holder, handoffErr := rn.waiterHandoffs(ctx, g, param, note)
	if err := rn.waitersIdle(ctx, g, w, holder, param, note); err != nil {
		return err
	}
	return handoffErr
}

// createNamespace has one Client create the collections of ns before the
// others start (FerretDB's SQLite backend does not always survive several
// Clients creating one collection at once).
func (rn *runner) createNamespace(ctx context.Context, ns string) error {
	if c, err := rn.d.Connect(ctx, NewMeter(), ns); err == nil {
		err = loadKey(ctx, c, 0)
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("creating the namespace: %w", err)
		}
	}
	return nil
}

// startWaiting has g's Client 0 take the lock and the w others wait for it.
func startWaiting(ctx context.Context, g *group, w int) error {
	const timeout = 2 * time.Minute
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, timeout); err != nil {
		return err
	}
	for i := 1; i <= w; i++ {
		g.send(i, "lock")
	}
	time.Sleep(time.Second) // let the waiters start waiting
	return nil
}

// waiterHandoffs runs ScaleRuns runs of handoffs among g's Clients, as in
// Handoff, and adds their figures (with note). It returns the Client that
// holds at the end, and why the handoffs stopped short if they did: the
// waiters still wait, and are counted all the same.
func (rn *runner) waiterHandoffs(ctx context.Context, g *group, param, note string) (holder int, handoffErr error) {
	var p50, p99 []float64
	doubles := 0
	for run := range rn.o.ScaleRuns {
		s, d, h, err := rn.chainOn(ctx, g, holder, rn.o.Handoffs)
		doubles += d
		holder = h
		if err != nil {
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
	return holder, handoffErr
}

// waiterLoad is what the waiters of scaleWaiters sent while they waited,
// a value per run.
type waiterLoad struct {
	per, bytes []float64 // commands/s and bytes/s, per waiter
	cpu        []float64 // the server's, % of a core
	held       []float64 // commands/s the holder sent
	// rates: each command's rate per waiter (commands/s), 0 in the runs
	// that did not send it.
	rates map[string][]float64
}

// waitersIdle counts, in ScaleRuns runs of ScaleIdleWindow, what the w
// waiters of g send while they wait (holder holds), and adds the figures.
func (rn *runner) waitersIdle(ctx context.Context, g *group, w, holder int, param, note string) error {
	// The waiters settle (a waiter looks again at doubling intervals for a
	// second after it announces itself), then are counted.
	time.Sleep(2 * time.Second)
	load := &waiterLoad{rates: map[string][]float64{}}
	for run := range rn.o.ScaleRuns {
		if err := rn.countWaiters(ctx, g, w, holder, run, param, load); err != nil {
			return err
		}
	}
	rn.r.add(Scale, param, scalePerWaiter, "cmds/s", load.per, note)
	for _, name := range slices.Sorted(maps.Keys(load.rates)) {
		if !slices.ContainsFunc(load.rates[name], func(r float64) bool { return r != 0 }) {
			continue // sent while setting up, not while waiting
		}
		rn.r.add(Scale, param, fmt.Sprintf(scaleByName, name), "cmds/s", load.rates[name], note)
	}
	rn.r.add(Scale, param, scaleBytes, "B/s", load.bytes, note)
	rn.r.add(Scale, param, scaleHolder, "cmds/s", load.held, note)
	if len(load.cpu) > 0 {
		rn.r.add(Scale, param, scaleServerCPU, "% of a core", load.cpu, note)
	}
	return nil
}

// countWaiters is run run of waitersIdle: the Clients' counts before and
// after ScaleIdleWindow, and the server's CPU meanwhile, into load.
func (rn *runner) countWaiters(ctx context.Context, g *group, w, holder, run int, param string, load *waiterLoad) error {
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
		load.cpu = append(load.cpu, 100*(cpu1-cpu0).Seconds()/rn.o.ScaleIdleWindow.Seconds())
	}
	var sum, sumBytes float64
	byName := map[string]float64{}
	for i := range b {
		secs := float64(b[i].mono-a[i].mono) / 1e9
		if i == holder {
			load.held = append(load.held, float64(b[i].commands-a[i].commands)/secs)
			continue
		}
		sum += float64(b[i].commands-a[i].commands) / secs
		sumBytes += float64(b[i].bytes-a[i].bytes) / secs
		for name, k := range b[i].byName {
			byName[name] += float64(k-a[i].byName[name]) / secs
		}
	}
	fw := float64(w)
	load.per, load.bytes = append(load.per, sum/fw), append(load.bytes, sumBytes/fw)
	load.addRates(run, byName, fw)
	rn.logf("%s: scale %s: idle run %d: %.3f cmds/s per waiter %v", rn.d.Name(), param, run+1, sum/fw, byName)
	return nil
}

// addRates appends run run's rate of each command per waiter (byName: the
// w waiters' rates in all): 0 for a command sent before and not in this
// run (added to byName), and 0s before for a command new in this run.
func (l *waiterLoad) addRates(run int, byName map[string]float64, w float64) {
	for name := range l.rates {
		if _, ok := byName[name]; !ok {
			byName[name] = 0
		}
	}
	for name, r := range byName {
		for len(l.rates[name]) < run {
			l.rates[name] = append(l.rates[name], 0)
		}
		l.rates[name] = append(l.rates[name], r/w)
	}
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
