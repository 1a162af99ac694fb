package suspend

import (
	"errors"
	"math"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// systemAlarm returns Process's alarm: a timerfd on CLOCK_BOOTTIME, or
// Go timers that poll if the kernel offers none.
func systemAlarm(now func() time.Time) alarm {
	a, err := newBootAlarm(now)
	if err != nil {
		return newGoAlarm(now, pollInterval)
	}
	return a
}

// A bootAlarm is a timerfd on CLOCK_BOOTTIME, which counts the time the
// machine spends suspended: the kernel expires it when that clock reaches
// its time, at once on resume if the machine slept past it. Its file is
// non-blocking, so os.File parks a waiting goroutine in the runtime's
// network poller rather than holding a thread.
type bootAlarm struct {
	now    func() time.Time // the Counter's clock
	fd     int
	f      *os.File
	broken atomic.Bool
}

func newBootAlarm(now func() time.Time) (*bootAlarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_BOOTTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &bootAlarm{now: now, fd: fd, f: os.NewFile(uintptr(fd), "suspend-timerfd")}, nil
}

// set arms the timerfd at the CLOCK_BOOTTIME time when the Counter's clock
// reaches target. It reads CLOCK_BOOTTIME before the Counter's clock: a
// suspend between the two readings then shortens the time left, and the
// alarm goes off early, whereas the other order would make it late by the
// suspend.
func (a *bootAlarm) set(target time.Time) {
	var boot unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		a.fail()
		return
	}
	at := boot.Nano()
	if d := target.Sub(a.now()); d > 0 {
		at = addSat(at, int64(d))
	}
	// An absolute time already past expires at once, where a relative
	// zero would disarm the timerfd.
	a.settime(at)
}

// wake arms the timerfd at a CLOCK_BOOTTIME time long past.
func (a *bootAlarm) wake() { a.settime(1) }

// settime arms the timerfd at the CLOCK_BOOTTIME time at. Setting it also
// discards an expiry that wait has not read, so wait returns only for this
// setting.
func (a *bootAlarm) settime(at int64) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
	if err := unix.TimerfdSettime(a.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		a.fail()
	}
}

// fail marks the alarm broken and wakes the runner, which replaces it.
// Neither reading CLOCK_BOOTTIME nor setting a timerfd that is open fails
// with the arguments given; this is in case one does.
func (a *bootAlarm) fail() {
	a.broken.Store(true)
	a.f.SetReadDeadline(time.Unix(1, 0))
}

// addSat returns a + b, b ≥ 0, capped at the largest int64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

var errBroken = errors.New("suspend: timerfd cannot be set")

// wait reads the timerfd's expiry count, which parks until it expires.
func (a *bootAlarm) wait() error {
	if a.broken.Load() {
		return errBroken
	}
	var buf [8]byte
	_, err := a.f.Read(buf[:])
	if a.broken.Load() {
		return errBroken
	}
	return err
}

func (a *bootAlarm) close() { a.f.Close() }
