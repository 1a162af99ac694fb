package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/plant"
)

// The bugs planted above the engine for the negative controls of the
// public-API simulation (integration/apisim, package internal/plant):
// each decision one changes is a function below, named by what it
// decides, whose body is the rule and then what the bug makes of it. In
// every build without -tags dsync_planted, plant.On is false and each is
// the rule alone. plant.MutexPastDeadline is planted in the lease's
// keeper (dsync/internal/lease).

// plantEngine plants in a Client's engine the engine bug that the planted
// bug stands for, if it stands for one.
func plantEngine(e *queue.Engine) {
	if !plant.On {
		return
	}
	switch {
	case plant.Is(plant.ReaderPastWriter):
		e.SetBug(queue.BugReadersPassWaitingWriters)
	case plant.Is(plant.SpanIgnored):
		e.SetBug(queue.BugSpanIgnored)
	case plant.Is(plant.HistoryIgnored):
		e.SetBug(queue.BugHistoryIgnored)
	case plant.Is(plant.ReadExpiredForgets):
		e.SetBug(queue.BugReadExpiredForgets)
	case plant.Is(plant.ResumeUnchecked):
		e.SetBug(queue.BugResumeUnchecked)
	case plant.Is(plant.OutageUncredited):
		e.SetBug(queue.BugOutageUncredited)
	}
}

// locksAnew reports whether a Mutex's lock after its suspended hold ended
// locks anew (anew: Lock) rather than return the error. RelockAnew: always.
func locksAnew(anew bool) bool { return anew || plant.On && plant.Is(plant.RelockAnew) }

// claimLimit is the limit a Semaphore's claims carry: its own.
// SemaphoreOverLimit adds a unit.
func claimLimit(limit int64) int64 {
	if plant.On && plant.Is(plant.SemaphoreOverLimit) {
		return limit + 1
	}
	return limit
}

// recordCounts reports whether Once counts h's run's done record, once
// it landed: only if its reply came while h was valid (validNow).
// OnceLateRecord counts it whenever it came.
func recordCounts(h *hold) bool {
	return validNow(h) || plant.On && plant.Is(plant.OnceLateRecord)
}

// progressed notes a report of progress by the work under w's holds
// (Mutex.Progress), if w watches them (nil: no deadline).
// StallFromHoldStart ignores it: a hold stalls a deadline after it began.
func progressed(w *progressWatch) {
	if w != nil && !(plant.On && plant.Is(plant.StallFromHoldStart)) {
		w.Report()
	}
}

// holdStalls reports whether h, an active hold, stalled: its work
// reported no progress for the deadline d (for since) and it is not an
// idle read claim. StallNeverFires: no hold ever does.
func holdStalls(h *hold, since, d time.Duration) bool {
	return since >= d && !h.idle.Load() && !(plant.On && plant.Is(plant.StallNeverFires))
}

// releaseStalled releases the claim of h, a stalled hold (releaseClaim).
// StallKeepsClaim keeps it, so the next waiter waits while the stalled
// holder's session lives.
func (p *core) releaseStalled(h *hold) {
	if plant.On && plant.Is(plant.StallKeepsClaim) {
		return
	}
	p.releaseClaim(h, "a stall")
}

// endStalled ends holds, which stalled, in stall's order: Lost() first,
// their claims released after the margin. StallReleasesFirst ends them
// the wrong way round: their claims are released at once, and their
// Lost() closes a tenth of the TTL later.
func endStalled(holds []*hold, last time.Time, reason error) {
	if !plant.On || !plant.Is(plant.StallReleasesFirst) || len(holds) == 0 {
		stall(holds, last, reason)
		return
	}
	p := holds[0].p
	p.client.inBackground(func() {
		for _, h := range holds {
			p.client.end(context.Background(), h.claim, true) //nolint:errcheck // a planted bug
		}
	})
	p.cfg.clock.AfterFunc(p.cfg.ttl/10, func() {
		for _, h := range holds {
			h.expireIfDue()
			if h.markStalled(reason) {
				h.TellLost()
				h.keeper.Remove(h)
			}
		}
	})
}
