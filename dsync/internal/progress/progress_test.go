package progress

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// bubbleClock is the lease.Clock of a synctest bubble.
type bubbleClock struct{}

func (bubbleClock) Now() time.Time { return time.Now() }
func (bubbleClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// recorder keeps what a Watch's Stalled hook was told.
type recorder struct {
	mu      sync.Mutex
	stalled []int
	active  map[int]bool
}

func (r *recorder) hooks() Hooks[int] {
	return Hooks[int]{
		Active: func(h int) bool { r.mu.Lock(); defer r.mu.Unlock(); return r.active[h] },
		Stalls: func(_ int, since, d time.Duration) bool { return since >= d },
		Stalled: func(holds []int, _ time.Time, _ time.Duration) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.stalled = append(r.stalled, holds...)
		},
	}
}

func (r *recorder) got() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := slices.Clone(r.stalled)
	slices.Sort(s)
	return s
}

// TestWatchStallsWithoutReports: holds watched with no report for the
// deadline are told stalled, once; reports keep them alive; a hold
// unwatched or no longer active is never told.
func TestWatchStallsWithoutReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		r := &recorder{active: map[int]bool{1: true, 2: true, 3: false}}
		w := New(d, bubbleClock{}, r.hooks())
		w.Watch(1)
		w.Watch(2)
		w.Watch(3)
		for range 5 { // reports within the deadline keep every hold
			time.Sleep(d / 2)
			w.Report()
		}
		synctest.Wait()
		if got := r.got(); len(got) != 0 {
			t.Fatalf("stalled while reporting: %v", got)
		}
		w.Unwatch(2)
		time.Sleep(2 * d)
		synctest.Wait()
		if got := r.got(); !slices.Equal(got, []int{1}) {
			t.Fatalf("stalled %v, want [1] (2 unwatched, 3 inactive)", got)
		}
		time.Sleep(3 * d)
		synctest.Wait()
		if got := r.got(); !slices.Equal(got, []int{1}) {
			t.Fatalf("stalled %v after more time, want [1] once", got)
		}
	})
}

// TestWatchDeadline: the deadline is the last report's plus d, and a nil
// Watch (a deadline that is off) takes Watch and Unwatch.
func TestWatchDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Minute
		w := New(d, bubbleClock{}, (&recorder{}).hooks())
		time.Sleep(time.Second)
		w.Report()
		if got, want := w.Deadline(), time.Now().Add(d); !got.Equal(want) {
			t.Fatalf("Deadline %v, want %v", got, want)
		}
		var off *Watch[int] = New(0, bubbleClock{}, Hooks[int]{})
		if off != nil {
			t.Fatal("New(0) is not nil")
		}
		off.Watch(1)
		off.Unwatch(1)
	})
}
