package suspend

import "time"

// A timer is one AfterFunc of a counting Counter.
type timer struct {
	target time.Time // on the Counter's clock
	f      func()
	// index is t's place in the Counter's pending heap, or -1 once it has
	// fired or been stopped. Guarded by the Counter's mu.
	index int
}

// timerHeap is a Counter's pending timers, earliest target first, for
// container/heap.
type timerHeap []*timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].target.Before(h[j].target) }

func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
