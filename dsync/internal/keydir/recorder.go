// Package keydir records the keys a dsync Client claims in the store's
// directory of keys (driver.KeyDirectory), which a Client's List reads:
// in the background, batched, retried after failures, and at most once per
// RecordAgain for each key, so that a claim never waits for it.
package keydir

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The keys a Client claims are recorded the first time this process
// claims a key, and again after recordAgain. A put that fails is tried again, after a
// pause that doubles each time (PutRetries times, then at a later claim
// of its key): a key used once, such as a lock named for a day, is
// claimed only once, and a busy server (FerretDB answers "database is
// locked" under load) would otherwise leave it unlisted.

const (
	// maxRecorded bounds the keys a Client remembers having recorded; a
	// key it forgot is recorded again (an insert the store answers with a
	// duplicate key) at its next claim.
	maxRecorded = 4096
	// recordAgain is how long a Client trusts a key it recorded to stay
	// recorded: an operator may empty the directory, and a key claimed
	// again after this long is recorded again.
	recordAgain = time.Hour
	// putTimeout bounds one put.
	putTimeout = 10 * time.Second
	// PutRetries is how many times a failed put is tried again, the first
	// after PutPause, each later one after twice the pause before.
	PutRetries = 6
	PutPause   = time.Second
	// putBatch is the most keys one put records: a process that claims
	// thousands of new keys in a burst records them in a few requests,
	// not one each (FerretDB commits its writes one at a time: puts of
	// one key each trailed a burst of claims long after it, and counted
	// in whatever the process did next: bench/RESULTS.md, renewal).
	putBatch = 500
)

// A Recorder records keys in the store's directory, one put (of up to
// putBatch keys) at a time, from a goroutine that runs while it has keys
// to put.
type Recorder struct {
	dir    driver.KeyDirectory // nil: the store has none, and nothing is recorded
	mono   func() time.Duration
	logger *slog.Logger
	// ctx bounds the puts; close cancels it once its grace has passed.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	recorded map[string]time.Duration // keys put, with the monotonic time of the put's sending
	pending  []string                 // keys to put, in the order claimed
	queued   map[string]struct{}      // the keys of pending, and the one being put
	failures map[string]int           // keys whose puts failed, and how many times
	running  bool                     // the goroutine runs
	closed   bool
	closing  chan struct{}  // closed by close: pauses before retries end
	done     sync.WaitGroup // the goroutine
}

// New returns a Recorder that puts keys in dir (nil: the store has none,
// and nothing is recorded), on the monotonic clock mono, logging failed
// puts at Debug to logger.
func New(dir driver.KeyDirectory, mono func() time.Duration, logger *slog.Logger) *Recorder {
	ctx, cancel := context.WithCancel(context.Background())
	return &Recorder{dir: dir, mono: mono, logger: logger, ctx: ctx, cancel: cancel, closing: make(chan struct{}),
		recorded: make(map[string]time.Duration), queued: make(map[string]struct{}), failures: make(map[string]int)}
}

// Claimed notes a claim of key, and puts key in the background unless it
// was put within recordAgain, or is being put. It does no I/O itself.
func (r *Recorder) Claimed(key string) {
	now := r.mono()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.dir == nil {
		return
	}
	if at, ok := r.recorded[key]; ok && now-at < recordAgain {
		return
	}
	if _, ok := r.queued[key]; ok {
		return
	}
	r.enqueueLocked(key)
}

// enqueueLocked adds key to the keys to put, and starts the goroutine
// that puts them if it is not running. r.mu must be held.
func (r *Recorder) enqueueLocked(key string) {
	if len(r.pending) >= maxRecorded {
		return // put at a later claim
	}
	r.queued[key] = struct{}{}
	r.pending = append(r.pending, key)
	if !r.running {
		r.running = true
		r.done.Add(1)
		go r.run()
	}
}

// run puts the pending keys, up to putBatch in a request, until there
// are none.
func (r *Recorder) run() {
	defer r.done.Done()
	for {
		r.mu.Lock()
		if len(r.pending) == 0 || r.ctx.Err() != nil {
			for _, k := range r.pending {
				delete(r.queued, k)
			}
			r.pending, r.running = nil, false
			r.mu.Unlock()
			return
		}
		n := min(len(r.pending), putBatch)
		batch := slices.Clone(r.pending[:n])
		r.pending = r.pending[n:]
		r.mu.Unlock()

		sent := r.mono()
		ctx, cancel := context.WithTimeout(r.ctx, putTimeout)
		err := r.dir.PutKeys(ctx, batch)
		cancel()
		r.mu.Lock()
		for _, key := range batch {
			delete(r.queued, key)
		}
		if err != nil && r.ctx.Err() == nil {
			r.retryLocked(batch)
		}
		if err == nil {
			for _, key := range batch {
				delete(r.failures, key)
				if _, ok := r.recorded[key]; !ok && len(r.recorded) >= maxRecorded {
					for k := range r.recorded { // forget any: it is put again at its next claim
						delete(r.recorded, k)
						break
					}
				}
				r.recorded[key] = sent
			}
		}
		r.mu.Unlock()
		if err != nil {
			r.logger.Debug("dsync: recording keys in the store's directory failed; they are tried again later", "keys", len(batch), "first", batch[0], "err", err)
		}
	}
}

// retryLocked puts keys again after a pause, but those that failed
// PutRetries times already (they are put at a later claim). r.mu must be
// held.
func (r *Recorder) retryLocked(keys []string) {
	var again []string
	pause := PutPause
	for _, key := range keys {
		n := r.failures[key]
		if n >= PutRetries || len(r.failures) >= maxRecorded {
			delete(r.failures, key)
			continue
		}
		r.failures[key] = n + 1
		r.queued[key] = struct{}{} // a claim meanwhile need not queue it again
		again = append(again, key)
		pause = max(pause, PutPause<<n)
	}
	if len(again) == 0 {
		return
	}
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.closing:
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, key := range again {
			delete(r.queued, key)
			if r.ctx.Err() != nil || r.closed {
				delete(r.failures, key)
				continue
			}
			r.enqueueLocked(key)
		}
	}()
}

// Close stops taking keys, waits until ctx ends for the keys pending to
// be put, then gives up on the rest, and waits for the goroutine.
func (r *Recorder) Close(ctx context.Context) {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.closing)
	}
	r.mu.Unlock()
	stop := context.AfterFunc(ctx, r.cancel)
	r.done.Wait()
	stop()
	r.cancel()
}
