package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The transfer scenario: a leader hands its leadership to the candidate
// queued last (Transfer), the ones ahead of it step aside; beside the
// graceful scenario (Resign to the candidate next in line).

// A Transferer is an election (Elections' Locker) whose leader can hand
// its leadership to a chosen candidate.
type Transferer interface {
	// ID is this candidate's identity, as Transfer takes it.
	ID() string
	// Transfer hands the leadership this candidate holds (since its Lock)
	// to candidate id; ended is called the moment its term ends (its
	// leadership context is cancelled), before the lease is released.
	Transfer(ctx context.Context, id string, ended func()) error
}

// transferCmd carries out a child's "id" (answered "id <ID>") and
// "transfer <ID>" (answered "transferring <mono>", "ended <mono>" when the
// term ends, "transferred <mono>" when Transfer returns).
func (c *childClient) transferCmd(ctx context.Context, f []string) {
	out := c.out
	tr, ok := c.l.(Transferer)
	if !ok {
		out.say("error transfer:", errNoTransfer)
		return
	}
	switch {
	case f[0] == "id":
		out.say("id", tr.ID())
	case len(f) == 2:
		c.held.Wait()
		out.say("transferring", Mono())
		if err := tr.Transfer(ctx, f[1], func() { out.say("ended", Mono()) }); err != nil {
			out.say("error transfer:", err)
			return
		}
		out.say("transferred", Mono())
	}
}

func (rn *runner) transfer(ctx context.Context) error {
	if ok, err := rn.canTransfer(ctx); err != nil || !ok {
		if err == nil {
			rn.r.lack(TransferScenario, errNoTransfer.Error())
		}
		return err
	}
	var errs []error
	for _, n := range rn.o.Candidates {
		param := count(n, "waiting candidate")
		var gap50, gap99, call50, call99 []float64
		doubles := 0
		var failed error
		for run := range rn.o.Runs {
			gaps, calls, d, err := rn.transferChain(ctx, n, rn.o.Handoffs)
			doubles += d
			if err != nil {
				failed = err
				break
			}
			gap50, gap99 = append(gap50, Percentile(gaps, 50)), append(gap99, Percentile(gaps, 99))
			call50, call99 = append(call50, Percentile(calls, 50)), append(call99, Percentile(calls, 99))
			rn.logf("%s: %s %s run %d: term end→Campaign p50 %.1f ms, p99 %.1f ms; Transfer→Campaign p50 %.1f ms",
				rn.d.Name(), TransferScenario, param, run+1, gap50[run], gap99[run], call50[run])
		}
		note := ""
		if failed != nil {
			note = "failed: " + failed.Error()
			errs = append(errs, fmt.Errorf("%s: %w", param, failed))
		}
		if doubles > 0 {
			note += fmt.Sprintf("; %s while another process led", count(doubles, "term"))
		}
		rn.r.add(TransferScenario, param, "term end→Campaign p50", "ms", gap50, note)
		rn.r.add(TransferScenario, param, "term end→Campaign p99", "ms", gap99, note)
		rn.r.add(TransferScenario, param, "Transfer→Campaign p50", "ms", call50, note)
		rn.r.add(TransferScenario, param, "Transfer→Campaign p99", "ms", call99, note)
	}
	return errors.Join(errs...)
}

var errNoTransfer = errors.New("no leadership transfer in this library")

// canTransfer reports whether the library's elections can transfer
// their leadership (Transferer).
func (rn *runner) canTransfer(ctx context.Context) (bool, error) {
	c, err := rn.d.Connect(ctx, NewMeter(), rn.ns("probe"))
	if err != nil {
		return false, err
	}
	defer c.Close()
	es, ok := c.(Elections)
	if !ok {
		return false, nil
	}
	l, err := es.NewElection("probe", DefaultTTL)
	if err != nil {
		return false, err
	}
	_, ok = l.(Transferer)
	return ok, nil
}

// transferChain runs handoffs among n+1 candidates: one leads, n wait in
// Campaign, queued one after the other; the leader transfers to the one
// queued last after a random hold, and campaigns again (so it is the last
// then). It returns, in ms, the times from the old term's end to the new
// leader's Campaign returning and from the start of Transfer to it, and
// how many terms began before the old one ended.
func (rn *runner) transferChain(ctx context.Context, n, handoffs int) (gaps, calls []float64, doubles int, err error) {
	ns := rn.ns("transfer")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n+1, childSpec{NS: ns, Key: "k", Election: true, TTL: DefaultTTL})
	if err != nil {
		return nil, nil, 0, err
	}
	defer g.close()
	const timeout = 2 * time.Minute
	ids := make([]string, n+1)
	for i := range ids {
		g.send(i, "id")
		m, err := g.wait(ctx, "id", i, timeout)
		if err != nil {
			return nil, nil, 0, err
		}
		f := strings.Fields(m.text)
		ids[i] = f[len(f)-1]
	}
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, timeout); err != nil {
		return nil, nil, 0, err
	}
	for i := 1; i <= n; i++ {
		g.send(i, "lock")
		time.Sleep(200 * time.Millisecond) // queued in order
	}
	time.Sleep(time.Second) // every candidate's status written
	holder, last := 0, n
	for range handoffs {
		time.Sleep(rn.o.HoldMin + rand.N(rn.o.HoldMax-rn.o.HoldMin+1))
		g.send(holder, "transfer", ids[last])
		start, err := g.wait(ctx, "transferring", holder, timeout)
		if err != nil {
			return gaps, calls, doubles, err
		}
		ended, err := g.wait(ctx, "ended", holder, timeout)
		if err != nil {
			return gaps, calls, doubles, err
		}
		acq, err := g.wait(ctx, "acquired", -1, timeout)
		if err != nil {
			return gaps, calls, doubles, err
		}
		if acq.proc != last {
			return gaps, calls, doubles, fmt.Errorf("process %d leads after a transfer to %d", acq.proc, last)
		}
		if acq.args[0] < ended.args[0] {
			doubles++
		}
		if _, err := g.wait(ctx, "transferred", holder, timeout); err != nil {
			return gaps, calls, doubles, err
		}
		gaps = append(gaps, ms(acq.args[0]-ended.args[0]))
		calls = append(calls, ms(acq.args[0]-start.args[0]))
		g.send(holder, "lock") // campaigns again: the last in the queue
		holder, last = acq.proc, holder
		time.Sleep(200 * time.Millisecond) // its claim queued
	}
	return gaps, calls, doubles, nil
}
