package harness

import (
	"context"
	"slices"
)

// throughput: procs processes lock and unlock one key as fast as they can.
func (rn *runner) throughput(ctx context.Context) error {
	n := rn.o.Procs
	ns := rn.ns("tput")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n, childSpec{NS: ns, Key: "k", TTL: DefaultTTL})
	if err != nil {
		return err
	}
	defer g.close()
	param := count(n, "process") + ", one key"
	var rates, cmds, jain, maxShare, minShare []float64
	for run := range rn.o.Runs {
		counts, sent, err := rn.loops(ctx, g, n)
		if err != nil {
			return err
		}
		var total, cycles, commands float64
		for i, c := range counts {
			total, cycles, commands = total+c, cycles+c+1, commands+sent[i]
		}
		rates = append(rates, total/rn.o.ThroughputFor.Seconds())
		cmds = append(cmds, commands/cycles)
		jain = append(jain, Jain(counts))
		maxShare = append(maxShare, slices.Max(counts)/total)
		minShare = append(minShare, slices.Min(counts)/total)
		rn.logf("%s: throughput run %d: %.1f holds/s, split %v", rn.d.Name(), run+1, rates[run], counts)
	}
	rn.r.add(Throughput, param, "holds/s, all processes", "holds/s", rates, "")
	rn.r.add(Throughput, param, "commands per Lock+Unlock, all processes", "cmds", cmds, "")
	rn.r.add(Throughput, param, "Jain fairness index (1 = equal split)", "", jain, "")
	rn.r.add(Throughput, param, "largest share of the holds", "%", pct(maxShare), "")
	rn.r.add(Throughput, param, "smallest share of the holds", "%", pct(minShare), "")
	return nil
}
