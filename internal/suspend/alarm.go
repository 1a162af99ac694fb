package suspend

import "time"

// pollInterval is how often, in awake time, a runner whose alarm cannot
// count suspended time looks at the clock again while timers are pending:
// a timer that a suspend carried past its time, or close to it, then
// fires up to that long late.
const pollInterval = time.Second

// An alarm is what a Counter's runner goroutine waits on until the
// earliest pending timer is due. Its methods other than wait are called
// with the Counter's mu held, from any goroutine, while the runner may be
// waiting.
type alarm interface {
	// set makes wait return once the Counter's clock reaches target,
	// replacing any earlier setting. It may return early, never late,
	// as far as the alarm can count suspended time.
	set(target time.Time)
	// wake makes wait return at once.
	wake()
	// wait blocks until the alarm goes off, or possibly earlier: the
	// runner looks at the clock anyway. An error means the alarm is
	// broken and must be replaced.
	wait() error
	// close releases the alarm once the runner is done with it.
	close()
}

// A goAlarm is an alarm of Go timers, which count awake time only: after
// a suspend it goes off late, unless someone calls wake on resume, as a
// Fake's suspend does. With poll set it goes off at least every poll of
// awake time, and a suspend makes it at most that late.
type goAlarm struct {
	now   func() time.Time // the Counter's clock
	poll  time.Duration    // 0: none
	t     *time.Timer      // guarded by the Counter's mu
	fired chan struct{}
}

func newGoAlarm(now func() time.Time, poll time.Duration) *goAlarm {
	// The channel is made by the goroutine that starts the runner, so
	// inside a testing/synctest bubble it belongs to the bubble and the
	// runner's wait on it is durably blocking.
	return &goAlarm{now: now, poll: poll, fired: make(chan struct{}, 1)}
}

func (a *goAlarm) set(target time.Time) {
	d := target.Sub(a.now())
	if d <= 0 {
		a.wake()
		return
	}
	if a.poll > 0 {
		d = min(d, a.poll)
	}
	if a.t == nil {
		a.t = time.AfterFunc(d, a.ring)
		return
	}
	a.t.Reset(d)
}

// wake rings now rather than through a timer: inside a testing/synctest
// bubble, a timer already set fires only once every goroutine of the
// bubble is blocked, which may be after the test has ended.
func (a *goAlarm) wake() {
	if a.t != nil {
		a.t.Stop()
	}
	a.ring()
}

// ring records that the alarm went off; a wake that the runner has yet to
// take already covers it.
func (a *goAlarm) ring() {
	select {
	case a.fired <- struct{}{}:
	default:
	}
}

func (a *goAlarm) wait() error {
	<-a.fired
	return nil
}

func (a *goAlarm) close() {
	if a.t != nil {
		a.t.Stop()
	}
}
