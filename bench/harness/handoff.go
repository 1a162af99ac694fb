package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// chain runs handoffs among n+1 processes: one holds, n wait in Lock; the
// holder unlocks after a random hold, the process whose Lock returns holds
// next, and the former holder waits again. It returns the Unlock→Lock times
// in ms, and how many acquisitions happened while another process held.
func (rn *runner) chain(ctx context.Context, n, handoffs int, election bool) ([]float64, int, error) {
	ns := rn.ns("chain")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n+1, childSpec{NS: ns, Key: "k", Election: election, TTL: DefaultTTL})
	if err != nil {
		return nil, 0, err
	}
	defer g.close()
	const timeout = 2 * time.Minute
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, timeout); err != nil {
		return nil, 0, err
	}
	for i := 1; i <= n; i++ {
		g.send(i, "lock")
	}
	time.Sleep(rn.o.Settle) // let the waiters start waiting
	samples, doubles, _, err := rn.chainOn(ctx, g, 0, handoffs)
	return samples, doubles, err
}

// chainOn runs handoffs on g, whose Client holder holds and whose others
// wait in Lock. It returns the Unlock→Lock times in ms, how many
// acquisitions happened while another process held, and the Client that
// holds at the end.
func (rn *runner) chainOn(ctx context.Context, g *group, holder, handoffs int) ([]float64, int, int, error) {
	const timeout = 2 * time.Minute
	doubles := 0
	var samples []float64
	for range handoffs {
		time.Sleep(rn.o.HoldMin + rand.N(rn.o.HoldMax-rn.o.HoldMin+1))
		g.send(holder, "unlock")
		rel, err := g.wait(ctx, "releasing", holder, timeout)
		if err != nil {
			return samples, doubles, holder, err
		}
		// An acquisition reported before this release began happened
		// while holder held: two holders at once. That process unlocks
		// and waits again, so the chain goes on.
		for {
			early := -1
			for i, m := range g.pending {
				if m.kind == "acquired" && m.args[0] < rel.args[0] {
					early = i
					break
				}
			}
			if early < 0 {
				break
			}
			doubles++
			p := g.pending[early].proc
			g.pending = slices.Delete(g.pending, early, early+1)
			g.send(p, "unlock")
			if _, err := g.wait(ctx, "releasing", p, timeout); err != nil {
				return samples, doubles, holder, err
			}
			if _, err := g.wait(ctx, "released", p, timeout); err != nil {
				return samples, doubles, holder, err
			}
			g.send(p, "lock")
		}
		acq, err := g.wait(ctx, "acquired", -1, timeout)
		if err != nil {
			return samples, doubles, holder, err
		}
		if _, err := g.wait(ctx, "released", holder, timeout); err != nil {
			return samples, doubles, holder, err
		}
		samples = append(samples, ms(acq.args[0]-rel.args[0]))
		g.send(holder, "lock")
		holder = acq.proc
	}
	return samples, doubles, holder, nil
}

func (rn *runner) handoffs(ctx context.Context) error {
	err := rn.chains(ctx, Handoff, rn.o.Waiters, false, "waiting process", "Unlock→Lock")
	if p, ok := rn.d.(LatencyProber); ok {
		err = errors.Join(err, rn.probe(ctx, p))
	}
	return err
}

// probe adds the floor of a handoff: a round trip, and an event's delivery.
func (rn *runner) probe(ctx context.Context, p LatencyProber) error {
	const param, samples = "floor", 100
	var rtt, ev []float64
	for run := range rn.o.Runs {
		// The prober cleans up after itself: nothing of a lock library's
		// to drop.
		r, e, err := p.ProbeLatency(ctx, rn.ns("probe"), samples)
		if err != nil {
			rn.r.na(Handoff, param, "round trip p50", "ms", "failed: "+err.Error())
			return fmt.Errorf("probe: %w", err)
		}
		rtt = append(rtt, Percentile(r, 50))
		if len(e) > 0 {
			ev = append(ev, Percentile(e, 50))
		}
		rn.logf("%s: probe run %d: round trip p50 %.2f ms, event p50 %.1f ms", rn.d.Name(), run+1, rtt[run], Percentile(e, 50))
	}
	rn.r.add(Handoff, param, "round trip p50", "ms", rtt, "")
	if len(ev) > 0 {
		rn.r.add(Handoff, param, "wake-up event delivery p50", "ms", ev, "")
	}
	return nil
}

func (rn *runner) graceful(ctx context.Context) error {
	c, err := rn.d.Connect(ctx, NewMeter(), rn.ns("probe"))
	if err != nil {
		return err
	}
	_, ok := c.(Elections)
	_ = c.Close()
	if !ok {
		for _, n := range rn.o.Candidates {
			p := count(n, "waiting candidate")
			rn.r.na(Graceful, p, "Resign→Campaign p50", "ms", "no leader election in this library")
			rn.r.na(Graceful, p, "Resign→Campaign p99", "ms", "no leader election in this library")
		}
		return nil
	}
	return rn.chains(ctx, Graceful, rn.o.Candidates, true, "waiting candidate", "Resign→Campaign")
}

func (rn *runner) chains(ctx context.Context, scenario string, ns []int, election bool, what, metric string) error {
	var errs []error
	for _, n := range ns {
		param := count(n, what)
		var p50, p99 []float64
		doubles := 0
		var failed error
		for run := range rn.o.Runs {
			s, d, err := rn.chain(ctx, n, rn.o.Handoffs, election)
			doubles += d
			if err != nil {
				failed = err
				break
			}
			p50, p99 = append(p50, Percentile(s, 50)), append(p99, Percentile(s, 99))
			rn.logf("%s: %s %s run %d: p50 %.1f ms, p99 %.1f ms", rn.d.Name(), scenario, param, run+1, p50[run], p99[run])
		}
		note := ""
		if failed != nil {
			note = "failed: " + failed.Error()
			errs = append(errs, fmt.Errorf("%s: %w", param, failed))
		}
		if doubles > 0 {
			note = strings.TrimPrefix(note+fmt.Sprintf("; %s while another process held", count(doubles, "acquisition")), "; ")
		}
		rn.r.add(scenario, param, metric+" p50", "ms", p50, note)
		rn.r.add(scenario, param, metric+" p99", "ms", p99, note)
	}
	return errors.Join(errs...)
}
