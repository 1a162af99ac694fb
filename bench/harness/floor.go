package harness

import (
	"context"
	"fmt"
	"time"
)

// FloorScenario measures what the store under a library can commit:
// durable inserts per second, sequential from one connection and from
// Procs connections at once, with the write concern the library writes
// with. Its figures are the floor the other figures are read against
// (render_floor.go): a Lock+Unlock is two inserts, so a library that
// takes one in much more than two inserts' time spends the rest
// elsewhere.
const FloorScenario = "floor"

// A CommitProber is a Driver that measures its store's floor: conns
// connections, each sending one insert at a time (the next once the last
// is acknowledged), all from a common start, for d. It returns the
// inserts acknowledged in that time, all connections together, and each
// one's latency in ms. ns names a fresh namespace, which the prober
// removes itself.
type CommitProber interface {
	ProbeCommits(ctx context.Context, ns string, conns int, d time.Duration) (inserts int, ms []float64, err error)
}

// floorParam names the rows of conns connections.
func floorParam(conns int) string {
	if conns == 1 {
		return "1 connection, one insert at a time"
	}
	return fmt.Sprintf("%d connections at once, one insert at a time each", conns)
}

// floor measures the store's commits, if the driver can.
func (rn *runner) floor(ctx context.Context) error {
	p, ok := rn.d.(CommitProber)
	if !ok {
		rn.logf("%s: floor: the driver has no commit probe", rn.d.Name())
		return nil
	}
	for _, conns := range []int{1, rn.o.Procs} {
		param := floorParam(conns)
		var rates, p50, p99 []float64
		for run := range rn.o.Runs {
			n, lat, err := p.ProbeCommits(ctx, rn.ns("floor"), conns, rn.o.ThroughputFor)
			if err != nil {
				rn.r.na(FloorScenario, param, "durable inserts/s, all connections", "inserts/s", "failed: "+err.Error())
				return fmt.Errorf("%s: %w", param, err)
			}
			rates = append(rates, float64(n)/rn.o.ThroughputFor.Seconds())
			p50, p99 = append(p50, Percentile(lat, 50)), append(p99, Percentile(lat, 99))
			rn.logf("%s: floor %s run %d: %.1f inserts/s, p50 %.2f ms, p99 %.2f ms", rn.d.Name(), param, run+1, rates[run], p50[run], p99[run])
		}
		rn.r.add(FloorScenario, param, "durable inserts/s, all connections", "inserts/s", rates, "")
		rn.r.add(FloorScenario, param, "insert p50", "ms", p50, "")
		rn.r.add(FloorScenario, param, "insert p99", "ms", p99, "")
	}
	return nil
}
