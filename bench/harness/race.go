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
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	lockers, ok, err := rn.contenders(ctx, n, rn.ns("race"), &closers)
	if err != nil || !ok {
		return err
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
		winners, roundErrs, roundErr := raceRound(ctx, lockers)
		errs += roundErrs
		if roundErr != nil {
			lastErr = roundErr
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

// contenders connects n Clients to namespace ns (closers, run at the
// race's end, close them), warms each with a Lock+Unlock of a key of its
// own, and makes each a Locker of the raced key. ok is false, with the
// figure recorded as not measured, if the library has no single attempt
// (TryLocker).
func (rn *runner) contenders(ctx context.Context, n int, ns string, closers *[]func()) (lockers []Locker, ok bool, err error) {
	for i := range n {
		conn, done, err := rn.connect(ctx, NewMeter(), ns)
		if err != nil {
			return nil, false, err
		}
		*closers = append(*closers, done)
		// Warm the connection and whatever the library sets up once.
		w, err := conn.NewMutex(fmt.Sprintf("warm%d", i), DefaultTTL)
		if err != nil {
			return nil, false, err
		}
		if err := w.Lock(ctx); err != nil {
			return nil, false, err
		}
		if err := w.Unlock(ctx); err != nil {
			return nil, false, err
		}
		l, err := conn.NewMutex("k", DefaultTTL)
		if err != nil {
			return nil, false, err
		}
		if _, ok := l.(TryLocker); !ok {
			rn.r.na(Race, "", "rounds with more than one holder", "rounds", "no single-attempt lock in this library")
			return nil, false, nil
		}
		lockers = append(lockers, l)
	}
	return lockers, true, nil
}

// raceRound has every Locker try once (TryLock) at the same moment, and
// the winners unlock. It returns how many won, how many attempts failed
// with an error, and the last such error.
func raceRound(ctx context.Context, lockers []Locker) (winners, errs int, lastErr error) {
	won := make([]bool, len(lockers))
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
	for i, ok := range won {
		if ok {
			winners++
			_ = lockers[i].Unlock(ctx)
		}
	}
	return winners, errs, lastErr
}
