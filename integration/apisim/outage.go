package apisim

import (
	"time"
)

// Store-wide outages (Options.Outages): now and then the store stops
// answering every process at once, as a MongoDB election, a restart or a
// stall of the server does: every request fails at once ("down"), or
// waits and lands when the store is back ("hang", a server stopped by
// SIGSTOP), for a tenth of a TTL up to a few TTLs, some longer than the
// outage grace every Client of such a run has (ClientWithOutageGrace).
// The processes' own faults go on beside them, a process cut off alone
// among them.

// outageGrace is the outage grace of every Client of an outage run. It
// fits the bucket spans of such a run (outageSpan) with the longest
// TTL the configurations draw.
const outageGrace = 3 * time.Second

// outageSpan is the shortest bucket span of an outage run: a grace must
// fit the span less the TTL less 2 s.
const outageSpan = 8 * time.Second

// Outage is one store-wide outage, as History.Outages records it.
type Outage struct {
	Hang     bool // requests wait and land when it ends; else they fail
	From, To time.Time
}

// storeOutage is the world's outage under way, guarded by w.mu.
type storeOutage struct {
	down bool
	hang chan struct{}
}

// outages drives the run's store-wide outages until end. maxTTL is the
// longest TTL of the processes.
func (w *world) outages(end time.Time, maxTTL time.Duration) {
	time.Sleep(w.rand(2*time.Second, 6*time.Second))
	for time.Now().Before(end) {
		var d time.Duration
		switch x := w.rand(0, 10); {
		case x < 2: // about the break (TTL/2): little or no credit
			d = w.rand(maxTTL/10, maxTTL/2)
		case x < 7: // shorter than the grace
			d = w.rand(maxTTL, outageGrace-maxTTL/2)
		default: // longer than the grace
			d = w.rand(outageGrace+maxTTL/2, outageGrace+3*maxTTL)
		}
		w.storeOutage(d, w.chance(0.5))
		time.Sleep(w.rand(3*time.Second, 10*time.Second))
	}
}

// storeOutage makes the store unreachable for every process for d (hang:
// their requests wait, then land).
func (w *world) storeOutage(d time.Duration, hang bool) {
	from := time.Now()
	w.mu.Lock()
	if hang {
		w.outage.hang = make(chan struct{})
	} else {
		w.outage.down = true
	}
	w.fig.Outages++
	w.mu.Unlock()
	w.tracef("OUTAGE hang %v for %v", hang, d)
	time.Sleep(d)
	w.mu.Lock()
	if hang {
		close(w.outage.hang)
		w.outage.hang = nil
	} else {
		w.outage.down = false
	}
	o := Outage{Hang: hang, From: from, To: time.Now()}
	w.hist.Outages = append(w.hist.Outages, o)
	w.hist.ProcFaults = append(w.hist.ProcFaults, ProcFault{Proc: -1, Kind: "store outage", From: o.From, To: o.To})
	w.mu.Unlock()
	w.tracef("OUTAGE over")
}
