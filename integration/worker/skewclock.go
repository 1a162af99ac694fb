package worker

import (
	"sync/atomic"
	"time"
)

// SkewClock is a clockcheck.Clock whose wall clock is off by an offset
// that can jump; its monotonic clock is the process's.
type SkewClock struct {
	start time.Time
	off   atomic.Int64
}

// NewSkewClock returns a clock whose wall time is off by offset.
func NewSkewClock(offset time.Duration) *SkewClock {
	c := &SkewClock{start: time.Now()}
	c.off.Store(int64(offset))
	return c
}

// Wall implements clockcheck.Clock.
func (c *SkewClock) Wall() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.off.Load()))
}

// Monotonic implements clockcheck.Clock.
func (c *SkewClock) Monotonic() time.Duration { return time.Since(c.start) }

// Jump moves the wall clock by d.
func (c *SkewClock) Jump(d time.Duration) { c.off.Add(int64(d)) }

// Offset returns the current offset.
func (c *SkewClock) Offset() time.Duration { return time.Duration(c.off.Load()) }
