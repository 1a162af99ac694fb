package harness

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// race: contenders with a connection each try once, at the same moment, to
// take a free lock; more than one winner in a round is two holders at once.
func (rn *runner) race(ctx context.Context) error {
	n := rn.o.Contenders
	ns := rn.ns("race")
	var lockers []Locker
	for i := range n {
		conn, done, err := rn.connect(ctx, NewMeter(), ns)
		if err != nil {
			return err
		}
		defer done()
		// Warm the connection and whatever the library sets up once.
		w, err := conn.NewMutex(fmt.Sprintf("warm%d", i), DefaultTTL)
		if err != nil {
			return err
		}
		if err := w.Lock(ctx); err != nil {
			return err
		}
		if err := w.Unlock(ctx); err != nil {
			return err
		}
		l, err := conn.NewMutex("k", DefaultTTL)
		if err != nil {
			return err
		}
		if _, ok := l.(TryLocker); !ok {
			rn.r.na(Race, "", "rounds with more than one holder", "rounds", "no single-attempt lock in this library")
			return nil
		}
		lockers = append(lockers, l)
	}
	if err := lockers[0].Lock(ctx); err != nil {
		return err
	}
	if err := lockers[0].Unlock(ctx); err != nil {
		return err
	}
	param := fmt.Sprintf("%s, %s", count(n, "contender"), count(rn.o.Rounds, "round"))
	bad, most, errs := 0, 0, 0
	var lastErr error
	for round := range rn.o.Rounds {
		won := make([]bool, n)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		var mu sync.Mutex
		for i, l := range lockers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				ok, err := l.(TryLocker).TryLock(ctx)
				won[i] = ok
				if err != nil {
					mu.Lock()
					errs++
					lastErr = err
					mu.Unlock()
				}
			}()
		}
		time.Sleep(10 * time.Millisecond)
		close(gate)
		wg.Wait()
		winners := 0
		for i, ok := range won {
			if ok {
				winners++
				_ = lockers[i].Unlock(ctx)
			}
		}
		if winners > 1 {
			bad++
		}
		most = max(most, winners)
		rn.logf("%s: race round %d: %d holders", rn.d.Name(), round+1, winners)
		time.Sleep(20 * time.Millisecond)
	}
	note := ""
	if errs > 0 {
		note = fmt.Sprintf("%d attempts failed with errors, last: %v", errs, lastErr)
	}
	rn.r.add(Race, param, "rounds with more than one holder", "rounds", []float64{float64(bad)}, note)
	rn.r.add(Race, param, "most holders in one round", "holders", []float64{float64(most)}, note)
	return nil
}
