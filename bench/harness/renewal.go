package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// renewal: one process holds many locks; what renewing them costs.
func (rn *runner) renewal(ctx context.Context) error {
	var errs []error
	for _, n := range rn.o.RenewLocks {
		if err := rn.renewN(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("%d locks: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func (rn *runner) renewN(ctx context.Context, n int) error {
	param := count(n, "lock")
	ttl := rn.o.RenewTTL
	interval := ttl / 3
	m := NewMeter()
	conn, done, err := rn.connect(ctx, m, rn.ns("renew"))
	if err != nil {
		return err
	}
	defer done()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%05d", i)
	}
	actx, cancel := context.WithTimeout(ctx, rn.o.AcquireBudget)
	defer cancel()
	names := map[string]bool{}
	if r, ok := conn.(Renewer); ok {
		for _, s := range r.RenewCommands() {
			names[s] = true
		}
	}
	m.Record()
	start := time.Now()
	var release func(context.Context) error
	var lostCount func() int
	if mh, ok := conn.(ManyHolder); ok {
		release, lostCount, err = mh.HoldMany(actx, keys, ttl)
	} else {
		release, lostCount, err = holdEach(actx, conn, keys, ttl)
	}
	took := time.Since(start)
	ev := m.Stop()
	if err != nil {
		why := fmt.Sprintf("gave up acquiring after %v: %v", took.Round(time.Second), err)
		if actx.Err() != nil {
			why = fmt.Sprintf("gave up: the budget for acquiring is %v; %v", rn.o.AcquireBudget, err)
		}
		if d := maxTook(ev, names); d > 0 {
			why += fmt.Sprintf("; meanwhile one renewal command took up to %v", d.Round(time.Millisecond))
		}
		rn.r.na(Renewal, param, "time to acquire them all", "s", why)
		for _, f := range []struct{ metric, unit string }{
			{"commands per renew interval", "cmds"}, {"bytes on the wire per renew interval", "B"},
			{"renew command p50", "ms"}, {"renew command p99", "ms"}, {"renewal time per interval (renew commands in flight)", "ms"},
		} {
			rn.r.na(Renewal, param, f.metric, f.unit, "")
		}
		return nil
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rn.o.AcquireBudget)
		defer cancel()
		_ = release(rctx)
	}()
	rn.r.add(Renewal, param, "time to acquire them all", "s", []float64{took.Seconds()}, "")
	time.Sleep(interval + interval/2)
	m.Record()
	a := m.Snapshot()
	time.Sleep(time.Duration(rn.o.RenewIntervals) * interval)
	c := m.Snapshot().Sub(a)
	ev = m.Stop()
	k := float64(rn.o.RenewIntervals)
	var lat []float64
	var spans [][2]int64
	failed := 0
	for _, e := range ev {
		if names[e.Name] {
			lat = append(lat, float64(e.Took)/1e6)
			spans = append(spans, [2]int64{e.At - int64(e.Took), e.At})
			if e.Failed {
				failed++
			}
		}
	}
	sum := busy(spans)
	var notes []string
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("%d renew commands failed", failed))
	}
	if lost := lostCount(); lost > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d holds lost", lost, n))
	}
	note := strings.Join(notes, "; ")
	rn.r.add(Renewal, param, "commands per renew interval", "cmds", []float64{float64(c.Commands) / k}, note)
	rn.r.add(Renewal, param, "bytes on the wire per renew interval", "B", []float64{float64(c.BytesOut+c.BytesIn) / k}, note)
	rn.r.add(Renewal, param, "renew command p50", "ms", []float64{Percentile(lat, 50)}, note)
	rn.r.add(Renewal, param, "renew command p99", "ms", []float64{Percentile(lat, 99)}, note)
	rn.r.add(Renewal, param, "renewal time per interval (renew commands in flight)", "ms", []float64{ms(sum) / k}, note)
	rn.logf("%s: renewal %s: acquired in %v; %.1f cmds, %.0f B per interval; renew p50 %.2f ms", rn.d.Name(), param,
		took.Round(time.Millisecond), float64(c.Commands)/k, float64(c.BytesOut+c.BytesIn)/k, Percentile(lat, 50))
	return nil
}

// busy returns how long at least one of spans was under way.
func busy(spans [][2]int64) int64 {
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var total, end int64
	for i, s := range spans {
		if i == 0 || s[0] > end {
			total += s[1] - s[0]
			end = s[1]
		} else if s[1] > end {
			total += s[1] - end
			end = s[1]
		}
	}
	return total
}

func maxTook(ev []Event, names map[string]bool) time.Duration {
	var d time.Duration
	for _, e := range ev {
		if names[e.Name] {
			d = max(d, e.Took)
		}
	}
	return d
}

// holdEach locks every key with a Locker of its own, eight at a time. It
// returns how to release them and how to count those lost meanwhile.
func holdEach(ctx context.Context, conn Conn, keys []string, ttl time.Duration) (func(context.Context) error, func() int, error) {
	h := &heldKeys{lockers: make([]Locker, len(keys)), held: make([]bool, len(keys))}
	for i, k := range keys {
		l, err := conn.NewMutex(k, ttl)
		if err != nil {
			return nil, nil, err
		}
		h.lockers[i] = l
	}
	if err := h.lockAll(ctx); err != nil {
		n := h.holding()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = h.release(rctx)
		return nil, nil, fmt.Errorf("%d of %d locks acquired: %w", n, len(keys), err)
	}
	return h.release, h.lost, nil
}

// heldKeys are holdEach's Lockers, a key each, and which of them hold.
type heldKeys struct {
	lockers []Locker
	held    []bool
}

// lockAll locks every Locker, eight at a time; after the first error it
// starts no more, and returns that error.
func (h *heldKeys) lockAll(ctx context.Context) error {
	var mu sync.Mutex
	var firstErr error
	eightAtATime(len(h.lockers), func(i int) bool { return true }, func(i int) {
		err := h.lockers[i].Lock(ctx)
		mu.Lock()
		if err == nil {
			h.held[i] = true
		} else if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	})
	return firstErr
}

// holding counts the Lockers that hold.
func (h *heldKeys) holding() int {
	n := 0
	for _, held := range h.held {
		if held {
			n++
		}
	}
	return n
}

// release unlocks the Lockers that hold, eight at a time, and returns the
// first three errors.
func (h *heldKeys) release(ctx context.Context) error {
	var mu sync.Mutex
	var errs []error
	eightAtATime(len(h.lockers), func(i int) bool { return h.held[i] }, func(i int) {
		if err := h.lockers[i].Unlock(ctx); err != nil {
			mu.Lock()
			if len(errs) < 3 {
				errs = append(errs, err)
			}
			mu.Unlock()
		}
	}, func() bool { return false })
	return errors.Join(errs...)
}

// eightAtATime calls do for each i in [0, n) that want admits, on eight
// goroutines, and starts no more once stop reports true.
func eightAtATime(n int, want func(i int) bool, do func(i int), stop func() bool) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
	for i := range n {
		if stop() {
			break
		}
		if want(i) {
			next <- i
		}
	}
	close(next)
	wg.Wait()
}

// lost counts the Lockers that report their lock lost (LostReporter).
func (h *heldKeys) lost() int {
	n := 0
	for _, l := range h.lockers {
		if lr, ok := l.(LostReporter); ok && lr.Lost() {
			n++
		}
	}
	return n
}
