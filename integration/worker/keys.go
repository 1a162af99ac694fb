package worker

import (
	"context"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// ModeKeys: the worker locks Keys keys at once (from the First-th), each with a Mutex of its
// own (one Client, one session), records each acquisition, and holds them
// all until it is told to stop. Two such workers make a holder and a
// waiter behind each of its keys (a test of many holds that expire
// together).
const ModeKeys = "keys"

// KeyOf is the i-th key of a ModeKeys worker whose Key is key.
func KeyOf(key string, i int) string { return fmt.Sprintf("%s-%d", key, i) }

func (w *worker) runKeys(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	backend, _, err := w.client(db)
	if err != nil {
		return err
	}
	defer backend.Close()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range cfg.Keys {
		key := KeyOf(cfg.Key, cfg.First+i)
		m, err := dsync.NewMutex(backend, key)
		if err != nil {
			return err
		}
		wg.Go(func() {
			if err := m.LockContext(ctx); err != nil {
				if ctx.Err() == nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("lock %s: %w", key, err))
					mu.Unlock()
				}
				return
			}
			w.emit(history.Event{Ev: history.EvAcquire, Owner: clienthook.OwnerOf(m), Key: key, Token: m.Token(),
				DL: history.Mono(m.ValidUntil()), Src: history.SrcLib, TTL: int64(cfg.TTL)})
			<-ctx.Done()
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}
