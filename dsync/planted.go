package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/plant"
)

// The bugs planted above the engine for the negative controls of the
// public-API simulation (integration/apisim, package internal/plant). In
// every build without -tags dsync_planted, plant.On is false and each of
// these is a constant the compiler folds away. plant.MutexPastDeadline
// is planted in the lease's keeper (dsync/internal/lease).

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
	}
}

// plantedLimit is the limit a Semaphore's claims carry:
// plant.SemaphoreOverLimit adds a unit.
func plantedLimit(limit int64) int64 {
	if plant.On && plant.Is(plant.SemaphoreOverLimit) {
		return limit + 1
	}
	return limit
}

// plantedLateRecord reports whether Once counts a record confirmed after
// its hold ended (plant.OnceLateRecord).
func plantedLateRecord() bool { return plant.On && plant.Is(plant.OnceLateRecord) }

// plantedStallNeverFires reports whether a progress deadline never
// stalls a hold (plant.StallNeverFires).
func plantedStallNeverFires() bool { return plant.On && plant.Is(plant.StallNeverFires) }

// plantedProgressIgnored reports whether Progress is ignored
// (plant.StallFromHoldStart).
func plantedProgressIgnored() bool { return plant.On && plant.Is(plant.StallFromHoldStart) }

// plantedStallKeepsClaim reports whether a stalled hold's claim is kept
// (plant.StallKeepsClaim).
func plantedStallKeepsClaim() bool { return plant.On && plant.Is(plant.StallKeepsClaim) }

// plantedStallReleasesFirst, when plant.StallReleasesFirst is planted,
// stalls holds the wrong way round: their claims are released at once,
// and their Lost() closes a tenth of the TTL later. It reports whether
// it did.
func plantedStallReleasesFirst(holds []*hold, last time.Time, reason error) bool {
	if !plant.On || !plant.Is(plant.StallReleasesFirst) || len(holds) == 0 {
		return false
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
	return true
}
