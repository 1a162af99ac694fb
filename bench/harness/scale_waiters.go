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
