package harness

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// idle: one process holds the lock, n wait; what the waiters send.
func (rn *runner) idle(ctx context.Context) error {
	var errs []error
	for _, n := range rn.o.IdleWaiters {
		if err := rn.idleN(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("%d waiters: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func (rn *runner) idleN(ctx context.Context, n int) error {
	ns := rn.ns("idle")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n+1, childSpec{NS: ns, Key: "k", TTL: DefaultTTL})
	if err != nil {
		return err
	}
	defer g.close()
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, time.Minute); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		g.send(i, "lock")
	}
	time.Sleep(2 * time.Second)
	stats := func() ([]msg, error) {
		out := make([]msg, n+1)
		for i := range n + 1 {
			g.send(i, "stats")
			m, err := g.wait(ctx, "stats", i, time.Minute)
			if err != nil {
				return nil, err
			}
			out[i] = m
		}
		return out, nil
	}
	param := count(n, "waiting process")
	var total, per, bytes, serverCPU []float64
	var first, last []msg
	for run := range rn.o.Runs {
		a, err := stats()
		if err != nil {
			return err
		}
		if first == nil {
			first = a
		}
		cpu0, cpuOK := ProcessCPU(rn.o.ServerPID)
		time.Sleep(rn.o.IdleWindow)
		cpu1, cpuOK1 := ProcessCPU(rn.o.ServerPID)
		if cpuOK && cpuOK1 {
			serverCPU = append(serverCPU, 100*(cpu1-cpu0).Seconds()/rn.o.IdleWindow.Seconds())
		}
		b, err := stats()
		if err != nil {
			return err
		}
		rate := func(i, field int) float64 {
			secs := float64(b[i].args[0]-a[i].args[0]) / 1e9
			return float64(b[i].args[field]-a[i].args[field]) / secs
		}
		var sum, sumBytes float64
		for i := 1; i <= n; i++ {
			sum += rate(i, 1)
			sumBytes += rate(i, 2) + rate(i, 3)
		}
		total, per, bytes = append(total, sum), append(per, sum/float64(n)), append(bytes, sumBytes)
		last = b
		rn.logf("%s: idle %s run %d: %.2f cmds/s in all", rn.d.Name(), param, run+1, sum)
	}
	// The holder renews every few seconds: count it over all the runs.
	holder := []float64{float64(last[0].args[1]-first[0].args[1]) / (float64(last[0].args[0]-first[0].args[0]) / 1e9)}
	rn.r.add(Idle, param, "commands/s sent by the waiters, all together", "cmds/s", total, "")
	rn.r.add(Idle, param, "commands/s sent per waiter", "cmds/s", per, "")
	rn.r.add(Idle, param, "bytes/s on the wire, all waiters", "B/s", bytes, "")
	rn.r.add(Idle, param, fmt.Sprintf("commands/s sent by the holder (TTL %v), over all runs", DefaultTTL), "cmds/s", holder, "")
	if len(serverCPU) > 0 {
		rn.r.add(Idle, param, "CPU of the server process while they wait", "% of a core", serverCPU, "")
	}
	return nil
}
