package integration

import (
	"net"

	"github.com/go-dsync/dsync/integration/hintrelay"
	"github.com/go-dsync/dsync/integration/history"
)

// Direct hints (package dsync/hint) under faults. In a cluster with hints
// on, every worker but w3 takes hints (w3 waits as a process without
// them does, beside the others), each behind a relay of its own
// (package hintrelay) that drops, duplicates and delays the hints sent to
// it, and sends forgeries, replays and garbage beside them. Hints are
// only ever hints: the checker must find nothing more than without them.
// And they must be used: a cluster that handed the lock over often
// enough fails if no hint woke a waiter, and one whose relays forged and
// replayed hints fails if its workers rejected or refused none (the
// faults must keep their teeth).

// minHandoffsForWakes is how many handoffs a cluster with hints must
// have made before it must show a waiter woken by a hint.
const minHandoffsForWakes = 20

// hinted reports whether worker name takes hints in a cluster with hints
// on.
func hinted(name string) bool { return name != "w3" }

// hintAddrs returns where worker name listens for hints and what it
// advertises: a free loopback port, and the address of its relay, which
// passes what it receives on to that port.
func (c *cluster) hintAddrs(name string) (listen, advertise string) {
	c.t.Helper()
	if r := c.relays[name]; r != nil {
		return c.hintListen[name], r.Addr()
	}
	// A free port: taken and given back, for the worker to take.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	listen = pc.LocalAddr().String()
	pc.Close()
	r, err := hintrelay.New(listen, hintrelay.Default)
	if err != nil {
		c.t.Fatal(err)
	}
	c.relays[name], c.hintListen[name] = r, listen
	return listen, r.Addr()
}

// hintCounts adds up what each worker process last recorded of its hints,
// and says how many processes took hints.
func (c *cluster) hintCounts() (sum history.HintCounts, procs int) {
	last := make(map[int]*history.HintCounts)
	c.log.each(func(ev history.Event) {
		if ev.Ev == history.EvHints && ev.Hints != nil {
			last[ev.PID] = ev.Hints
		}
	})
	for _, h := range last {
		sum.Sent += h.Sent
		sum.Received += h.Received
		sum.Rejected += h.Rejected
		sum.Refused += h.Refused
		sum.Taken += h.Taken
		sum.Woke += h.Woke
	}
	return sum, len(last)
}

// checkHints adds the cluster's hints and their faults to the summary,
// and checks that hints were used and that the forgeries reached the
// workers' checks.
func (c *cluster) checkHints(r *history.Report) {
	c.t.Helper()
	if !c.hints {
		return
	}
	var faults hintrelay.Counts
	for _, rl := range c.relays {
		faults.Add(rl.Counts())
	}
	h, procs := c.hintCounts()
	c.t.Logf("hints: %d processes took hints: sent %d, received %d, taken %d, woke %d waiters first, rejected %d, refused %d; relays: %+v",
		procs, h.Sent, h.Received, h.Taken, h.Woke, h.Rejected, h.Refused, faults)
	summary.addHints(procs, h, faults)
	if r.Handoffs >= minHandoffsForWakes && h.Woke == 0 {
		c.t.Errorf("no hint woke a waiter in %d handoffs: hints were not used, and the test shows nothing of them", r.Handoffs)
	}
	if faults.Forged+faults.Garbage >= 5 && h.Rejected == 0 {
		c.t.Errorf("the relays sent %d forged hints and %d of garbage; the workers rejected none", faults.Forged, faults.Garbage)
	}
	if faults.Replayed+faults.Duplicated >= 5 && h.Refused == 0 {
		c.t.Errorf("the relays sent %d replays and %d duplicates; the workers refused none", faults.Replayed, faults.Duplicated)
	}
}
