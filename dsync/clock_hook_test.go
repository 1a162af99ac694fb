package dsync

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/lease"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// countingClock is the time package's clock, counting its readings.
type countingClock struct{ reads *atomic.Int64 }

func (c countingClock) Now() time.Time { c.reads.Add(1); return time.Now() }
func (c countingClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// TestClockRidesOnTheHookStore: the clock a test sets in a
// clienthook.Wrap's Settings is the Client's and its primitives', and a
// Client made without one keeps the system clock.
func TestClockRidesOnTheHookStore(t *testing.T) {
	var reads atomic.Int64
	clock := countingClock{&reads}
	c, err := NewClient(clienthook.Wrap[driver.Store](memory.New(), clienthook.Settings{Clock: clock}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := NewMutex(c, "k", Quiet)
	if err != nil {
		t.Fatal(err)
	}
	m.Lock()
	//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the clock read, not a critical section
	m.Unlock()
	if c.cfg.lease.Clock != clock || m.cfg.clock != clock || reads.Load() == 0 {
		t.Errorf("the hook's clock: the Client's %v, the Mutex's %v, read %d times", c.cfg.lease.Clock, m.cfg.clock, reads.Load())
	}
	plain, err := NewClient(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.cfg.lease.Clock != lease.Clock(theSystemClock) {
		t.Errorf("a Client without a hook's clock has %v, want the system clock", plain.cfg.lease.Clock)
	}
}
