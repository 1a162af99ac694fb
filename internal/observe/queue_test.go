package observe

import (
	"slices"
	"sync"
	"testing"
)

// TestQueueDeliversInOrder: events run one at a time, in the order sent,
// and Close returns after the last.
func TestQueueDeliversInOrder(t *testing.T) {
	var got []int
	q := New(nil)
	for i := range 100 {
		q.Send(func() { got = append(got, i) })
	}
	q.Close()
	if want := seq(100); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	q.Send(func() { t.Error("an event sent after Close ran") })
	q.Close()
}

// TestQueueNeverBlocks: an observer stuck in an event does not stop Send;
// what does not fit is dropped and counted, and the count is delivered
// once the observer is back.
func TestQueueNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var mu sync.Mutex
	var got []int
	dropped := 0
	q := New(func(n int) { mu.Lock(); dropped += n; mu.Unlock() })
	q.Send(func() { close(started); <-release })
	<-started
	for i := range Size + 10 { // one more than fits in all, 10 over
		q.Send(func() { mu.Lock(); got = append(got, i); mu.Unlock() })
	}
	close(release)
	q.Close()
	if dropped != 10 {
		t.Errorf("dropped %d events, want 10", dropped)
	}
	if want := seq(Size); !slices.Equal(got, want) {
		t.Errorf("delivered %d events (%v...), want %d", len(got), got[:min(5, len(got))], len(want))
	}
}

func TestNilQueue(t *testing.T) {
	var q *Queue
	q.Send(func() { t.Error("ran") })
	q.Close()
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
