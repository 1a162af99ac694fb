package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/lockset"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// ModeLockSet: the worker takes lock sets (dsync/lockset) in a loop: each
// of 2 to 4 keys (at most Keys) drawn from Keys keys (KeyOf, from the
// First-th), named in a random order, each a Mutex of its own on the
// worker's one Client. It records each member's hold as a Mutex worker
// records its one (EvAcquire, with Kind KindSetMember, the grant's name
// in WID and the set's size in Value, so that the checker can see every
// grant whole), keeps the set a while, and unlocks it. No register: a
// register goes with one key.
const ModeLockSet = "lockset"

// Set sizes of a ModeLockSet worker.
const (
	minSetSize = 2
	maxSetSize = 4
)

// runLockSet takes lock sets until told to stop or Config.Holds sets
// are done.
func (w *worker) runLockSet(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	if cfg.Keys < minSetSize || cfg.Register != "" {
		return fmt.Errorf("a lock-set worker needs at least %d keys and no register (Keys %d, Register %q)", minSetSize, cfg.Keys, cfg.Register)
	}
	backend, _, err := w.client(db)
	if err != nil {
		return err
	}
	defer backend.Close()
	mus := make([]*dsync.Mutex, cfg.Keys)
	for i := range mus {
		if mus[i], err = dsync.NewMutex(backend, KeyOf(cfg.Key, cfg.First+i)); err != nil {
			return err
		}
	}
	for n := 0; cfg.Holds == 0 || n < cfg.Holds; n++ {
		picked := rand.Perm(len(mus))[:minSetSize+rand.IntN(min(maxSetSize, len(mus))-minSetSize+1)]
		members := make([]lockset.Member, len(picked))
		keys := make([]string, len(picked))
		for i, k := range picked {
			members[i], keys[i] = lockset.Mutex(mus[k]), KeyOf(cfg.Key, cfg.First+k)
		}
		set, err := lockset.New(backend, members)
		if err != nil {
			return err
		}
		if err := set.LockContext(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := w.setHold(ctx, set, picked, mus, keys); err != nil {
			return err
		}
		if !sleepCtx(ctx, cfg.Gap) {
			return nil
		}
	}
	return nil
}

// setHold records the hold set has just taken of keys (its members, the
// Mutexes mus[picked[i]]), keeps it a while, and unlocks it. A member
// whose own Mutex does not hold with the token the set reports is a set
// granted in part: the worker records it (its token as the Mutex has it)
// and fails.
func (w *worker) setHold(ctx context.Context, set *lockset.Set, picked []int, mus []*dsync.Mutex, keys []string) error {
	cfg := &w.cfg
	grant := fmt.Sprintf("%s.%d.set%d", cfg.Name, w.pid, w.seq.Add(1))
	tokens := set.Tokens()
	holds := make([]*hold, len(keys))
	deadlines := make([]func() int64, len(keys))
	stops := make([]func(), len(keys))
	var partial error
	for i, key := range keys {
		mu := mus[picked[i]]
		got := mu.Token()
		if got != tokens[i] || got == 0 {
			partial = errors.Join(partial, fmt.Errorf("set %s: member %s holds with token %d, the set says %d", grant, key, got, tokens[i]))
		}
		holds[i] = &hold{w: w, key: key, token: got}
		w.rec.holding(key, holds[i].token, history.Now())
		w.emit(history.Event{Ev: history.EvAcquire, Owner: clienthook.OwnerOf(mu), Key: key, Token: holds[i].token,
			DL: history.Mono(mu.ValidUntil()), Src: history.SrcLib, TTL: int64(cfg.TTL), Margin: int64(cfg.TTL / 20),
			Kind: history.KindSetMember, WID: grant, Value: int64(len(keys))})
		deadlines[i] = func() int64 { return history.Mono(mu.ValidUntil()) }
		stops[i] = holds[i].watch(mu.Lost(), deadlines[i], history.SrcLib)
	}

	until := time.Now().Add(time.Duration(float64(cfg.HoldFor) * (0.5 + rand.Float64())))
	ends := w.endHolds.Load()
	lost := set.Lost()
	for time.Now().Before(until) && ctx.Err() == nil && w.endHolds.Load() == ends && !isClosed(lost) {
		sleepCtx(ctx, min(10*time.Millisecond, time.Until(until)))
	}

	for i, h := range holds {
		h.end(deadlines[i], history.SrcLib)
	}
	// As for a Mutex, each released event carries the time Unlock was
	// called and the member's deadline then.
	dls, called := make([]int64, len(holds)), history.Now()
	for i := range holds {
		dls[i] = deadlines[i]()
	}
	uctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
	err := set.UnlockContext(uctx)
	cancel()
	for i, h := range holds {
		stops[i]()
		// UnlockContext wraps dsync.ErrLost once for each member lost
		// before it; the member's own Err says whether it was one.
		memberLost := errors.Is(mus[picked[i]].Err(), dsync.ErrLost)
		w.emit(history.Event{Ev: history.EvReleased, Key: h.key, Token: h.token, T: called, DL: dls[i], Src: history.SrcLib,
			Lost: memberLost, Err: errString(err)})
		w.rec.forget(h.key, h.token)
	}
	return partial
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
