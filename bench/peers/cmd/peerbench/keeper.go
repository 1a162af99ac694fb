package main

import (
	"context"
	"sync"
	"time"
)

// keeper renews a hold every interval with renew until stopped: the loop
// a user writes for a library without automatic renewal. A renewal the
// store refuses (ok false) ends the hold; one that fails is retried at the
// next tick, and the hold counts as lost once no renewal succeeded for a
// whole TTL.
type keeper struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	lost bool
}

func startKeeper(ttl time.Duration, renew func(context.Context) (bool, error)) *keeper {
	ctx, cancel := context.WithCancel(context.Background())
	k := &keeper{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		lastOK := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, ttl)
			ok, err := renew(rctx)
			rcancel()
			if ctx.Err() != nil {
				return
			}
			if err == nil && ok {
				lastOK = sent
				continue
			}
			if (err == nil && !ok) || time.Since(lastOK) > ttl {
				k.mu.Lock()
				k.lost = true
				k.mu.Unlock()
				return
			}
		}
	}()
	return k
}

// stop ends the loop and waits for a renewal in flight.
func (k *keeper) stop() {
	if k == nil {
		return
	}
	k.cancel()
	<-k.done
}

func (k *keeper) isLost() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}
