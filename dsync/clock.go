package dsync

import "time"

// Clock is the time source of a Mutex. A Mutex only measures elapsed time
// with it (deadlines, waits), so Now must carry a monotonic reading, as
// time.Now does; the wall-clock part is never used. Tests rarely need it:
// testing/synctest fakes the time package that the default clock uses.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop prevents the
	// call if it has not started and reports whether it did so.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// SystemClock returns the Clock backed by the time package.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// sleep waits for d on clock, or until done is closed; it reports whether
// the full duration passed.
func sleep(clock Clock, d time.Duration, done <-chan struct{}) bool {
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
