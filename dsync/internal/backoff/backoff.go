// Package backoff is the pause of dsync's primitives between attempts
// that failed with an error (not with contention): doubled from Min up
// to Max, with jitter, waited on the Client's clock.
package backoff

import (
	"math/rand/v2"
	"time"
)

// The pause's bounds.
const (
	Min = 10 * time.Millisecond
	Max = 2 * time.Second
)

// Next is the pause after d: doubled, at most Max.
func Next(d time.Duration) time.Duration { return min(2*d, Max) }

// Jitter returns a duration in [d/2, d).
func Jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// A Timer calls f in its own goroutine after d; stop prevents the call
// if it has not started and reports whether it did so (as a dsync.Client's clock does).
type Timer interface {
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Sleep waits for d on clock, or until done is closed; it reports
// whether the full duration passed.
func Sleep(clock Timer, d time.Duration, done <-chan struct{}) bool {
	if d <= 0 {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	fired := make(chan struct{})
	stop := clock.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
		return true
	case <-done:
		stop()
		return false
	}
}
