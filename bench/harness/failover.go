package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// failovers: the holder (leader) is killed with SIGKILL while a second
// process waits; the time until the waiter holds, as a multiple of the TTL.
func (rn *runner) failovers(ctx context.Context) error {
	var errs []error
	kinds := []bool{false}
	if c, err := rn.d.Connect(ctx, NewMeter(), rn.ns("probe")); err == nil {
		if _, ok := c.(Elections); ok {
			kinds = append(kinds, true)
		}
		_ = c.Close()
	}
	ttl := rn.o.FailoverTTL
	for _, election := range kinds {
		param := fmt.Sprintf("lock holder killed, TTL %v", ttl)
		if election {
			param = fmt.Sprintf("leader killed, TTL %v", ttl)
		}
		var ratios, msv []float64
		var failed error
		for run := range rn.o.FailoverRuns {
			v, err := rn.failover(ctx, election, ttl)
			if err != nil {
				failed = err
				break
			}
			ratios, msv = append(ratios, v/ms(int64(ttl))), append(msv, v)
			rn.logf("%s: failover (%s) run %d: %.0f ms = %.2f TTL", rn.d.Name(), param, run+1, v, v/ms(int64(ttl)))
		}
		note := ""
		if failed != nil {
			note = "failed: " + failed.Error()
			errs = append(errs, failed)
		}
		rn.r.add(Failover, param, "SIGKILL→next hold, median", "× TTL", ratios, note)
		rn.r.add(Failover, param, "SIGKILL→next hold, max", "× TTL", maxOf(ratios), note)
		rn.r.add(Failover, param, "SIGKILL→next hold, median", "ms", msv, note)
	}
	return errors.Join(errs...)
}

func (rn *runner) failover(ctx context.Context, election bool, ttl time.Duration) (float64, error) {
	ns := rn.ns("fo")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, 2, childSpec{NS: ns, Key: "k", Election: election, TTL: ttl})
	if err != nil {
		return 0, err
	}
	defer g.close()
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, time.Minute); err != nil {
		return 0, err
	}
	g.send(1, "lock")
	// Kill at a random point of the holder's renewal cycle, after the
	// waiter has started waiting.
	time.Sleep(ttl/2 + rand.N(ttl))
	t0 := g.kill(0)
	acq, err := g.wait(ctx, "acquired", 1, 10*ttl+30*time.Second)
	if err != nil {
		return 0, err
	}
	return ms(acq.args[0] - t0), nil
}
