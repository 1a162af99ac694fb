package lease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// countingClock is testClock counting the timers set and not yet fired
// or stopped.
type countingClock struct {
	mu      sync.Mutex
	pending int
}

func (c *countingClock) Now() time.Time { return time.Now() }

func (c *countingClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	c.pending++
	c.mu.Unlock()
	var once sync.Once
	done := func() {
		once.Do(func() {
			c.mu.Lock()
			c.pending--
			c.mu.Unlock()
		})
	}
	t := time.AfterFunc(d, func() { done(); f() })
	return func() bool {
		stopped := t.Stop()
		if stopped {
			done()
		}
		return stopped
	}
}

func (c *countingClock) timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending
}

// TestCloseDuringOpenLeavesNoSession: a Close while the first Enter's
// session is being opened ends that Enter with the Closed error once
// the store answers, and leaves no session behind: no deadline timer
// is pending (a dsync.Client's timers keep a goroutine of the process
// running while any is), and the session opened too late is retired.
// Enter once kept it as the Keeper's session after Close, armed for a
// TTL.
func TestCloseDuringOpenLeavesNoSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &countingClock{}
		p := Params{TTL: 2 * time.Second, Clock: clock}
		if err := p.Settle(); err != nil {
			t.Fatal(err)
		}
		opening, answer := make(chan struct{}), make(chan struct{})
		closed := errors.New("closed")
		var wg sync.WaitGroup
		env := testEnv(&wg, closed)
		env.Open = func(context.Context, time.Duration) (string, error) {
			close(opening)
			<-answer
			return "s", nil
		}
		k := New(p, env)
		entered := make(chan error, 1)
		go func() {
			_, err := k.Enter(context.Background())
			entered <- err
		}()
		<-opening
		k.Close(closed)
		close(answer)
		if err := <-entered; !errors.Is(err, closed) {
			t.Fatalf("Enter whose session opened after Close = %v; want the Closed error", err)
		}
		wg.Wait()
		if n := clock.timers(); n != 0 {
			t.Fatalf("%d timers pending after Close and the Enter it ended; want none", n)
		}
		if _, err := k.Enter(context.Background()); !errors.Is(err, closed) {
			t.Fatalf("Enter after Close = %v; want the Closed error", err)
		}
	})
}
