package queue

import (
	"sync"
	"sync/atomic"
	"time"
)

// keys is what this process knows of each key: the facts a claim, a walk,
// a refresh or a prune learnt of its chain (keyState), and the Claim calls
// and unended claims that keep a key's knowledge from being dropped. Its
// lock is held only inside its methods, which call nothing outside it.
type keys struct {
	max int // Config.MaxKeys

	mu    sync.Mutex
	byKey map[string]*keyState
	// pins counts, by key, the Claim calls in progress and the claims they
	// made that have not ended: their keys' knowledge (the segment, its
	// gate and floor) is kept while they need it (see state).
	pins map[string]int
	// lost: a protocol document read after Agree named another span
	// (span.go). Every key was forgotten when it was set, under mu, and
	// no gate is learnt again (learnGate checks it under mu); lostErr
	// (under mu) is the error starts and joins return from then on.
	lost    atomic.Bool
	lostErr *SpanError
	// drops counts the keys whose knowledge state dropped (Drops).
	drops atomic.Int64
}

// keyState is what this process knows of a key. Every field is a fact
// about the chain as the store held it when it was learned; none is acted
// on without the store confirming it (see Claim and Walk). All of it
// belongs to the segment seg: learning a gate of another forgets the rest.
type keyState struct {
	// newest is an epoch known to have existed (0: none known). An insert
	// of epoch E+1 is sent only when E is known to have existed (F1).
	newest uint64
	// tip is the release of epoch newest, when this process released
	// it. The next claim re-inserts that claim's shadow together with its
	// own insert: the duplicate key proves the claim still in the store
	// (see Claim and tip.go).
	tip tipRelease
	// gap is a missing epoch a walk found with no floor that counts above
	// it (see gap.go): the next claim starts below it. 0: none.
	gap uint64
	// seg is the segment all of the above belongs to (0: none known),
	// cover the highest bucket whose gate is known to name it, and floor
	// that gate's floor (see segment.go and floor.go).
	seg   uint64
	cover int64
	floor Floor
	// history is the store's history (history.go) in which seg's gate
	// was learnt, as that gate records it: the claims made on this
	// knowledge record it (Doc.History), and hold only in it; its
	// refreshes' gates record it too.
	history string
	// own is the highest floor this process can vouch for itself: a
	// claim of seg that held with every lower claim ended. The gates it
	// inserts record the higher of own and floor.
	own Floor
	// mine are this process's claims of seg not yet pruned (epoch →
	// nonce and sending time), so that a prune deletes them without
	// reading them; pruned is the highest bucket whose gate's floor this
	// process has pruned below, and prunedTo the epoch below which it
	// pruned (see claim.go: prune).
	mine     map[uint64]mineRec
	pruned   int64
	prunedTo uint64
	// strayUntil: until then (store time), a start of the key meets the
	// gates of a segment of another history of the store (history.go).
	strayUntil time.Time
}

// hasTip reports whether ks knows the release of its newest epoch.
func (ks *keyState) hasTip() bool { return ks.newest > 0 && ks.tip.Epoch == ks.newest }

func newKeys(max int) *keys {
	return &keys{max: max, byKey: make(map[string]*keyState), pins: make(map[string]int)}
}

// state returns key's entry, creating it; k.mu must be held.
//
// Past Config.MaxKeys entries, it drops the knowledge of every key on which this
// engine has no claim in progress or not yet ended: a claim relies on the
// segment and gate it entered until it holds, and then on their coverage,
// so dropping theirs would send them back to the store (or make a claim
// give up an insert that landed, or a hold fail to start) for every key
// another goroutine adds. The keys kept do not count toward the bound, so
// that a process with more claims than it does not scan them all for each
// new key.
func (k *keys) state(key string) *keyState {
	ks := k.byKey[key]
	if ks == nil {
		if len(k.byKey) >= k.max+len(k.pins) {
			for name := range k.byKey {
				if k.pins[name] == 0 {
					delete(k.byKey, name)
					k.drops.Add(1)
				}
			}
		}
		ks = &keyState{}
		k.byKey[key] = ks
	}
	return ks
}

// Drops returns how many times the engine dropped a key's knowledge to
// stay within Config.MaxKeys.
func (k *keys) Drops() int64 { return k.drops.Load() }

// pin and unpin count a Claim call or an unended claim on key (see
// state).
func (k *keys) pin(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pins[key]++
}

func (k *keys) unpin(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pins[key]--; k.pins[key] <= 0 {
		delete(k.pins, key)
	}
}

func (k *keys) snapshot(key string) keyState {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ks := k.byKey[key]; ks != nil {
		return *ks
	}
	return keyState{}
}

// learnNewest records that epoch existed. A newer epoch than the known
// tip makes the tip stale.
func (k *keys) learnNewest(key string, epoch uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ks := k.state(key)
	ks.newest = max(ks.newest, epoch)
}

// learnTip records a release this process made, as the tip if its epoch
// is the newest known.
func (k *keys) learnTip(m tipRelease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ks := k.state(m.Key)
	if m.Epoch >= ks.newest {
		ks.newest = m.Epoch
		ks.tip = m
	}
}

// forget drops what is known of key's newest epoch, after an insert of
// unknown outcome: inserting above an epoch that may not exist would break
// F1.
func (k *keys) forget(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ks := k.byKey[key]; ks != nil {
		ks.newest, ks.tip = 0, tipRelease{}
	}
}

// forgetAll drops everything learned of every key, once the store showed
// that it lost some of it (ErrReset).
func (k *keys) forgetAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.byKey)
}

// learnGate records gate g of key (a gate of g.Seg for bucket g.Bucket):
// coverage up to its bucket, and its floor. Knowledge of another segment
// is dropped: it belonged to a segment that is over. So is knowledge of
// a segment of the same number learnt in another history of the store
// (an emptying came between: segments of two histories share a number
// when they start in one quantum of store time): g's callers have read
// the protocol document after it, which names g's history (but Queue's
// and the floor reads', which learn only a gate of the history they
// know). A segment's gates carry floors that only rise with
// their buckets (refreshKey), so the floor known is that of the highest
// gate known. Once the span is lost (loseAll), nothing is learnt.
func (k *keys) learnGate(key string, g Doc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost.Load() {
		return // (checked under mu: loseAll forgets every key under it)
	}
	ks := k.state(key)
	if ks.seg != g.Seg || !sameKnown(ks.history, g.Nonce) {
		*ks = keyState{seg: g.Seg, cover: g.Bucket, floor: g.Floor, history: g.Nonce}
		return
	}
	if ks.history == "" {
		ks.history = g.Nonce
	}
	ks.cover = max(ks.cover, g.Bucket)
	if g.Floor.Epoch > ks.floor.Epoch {
		ks.floor = g.Floor
	}
}

// dropCover forgets key's segment seg (any segment, if seg is 0), and with
// it all that is known of the key: the next claim finds the live segment
// again.
func (k *keys) dropCover(key string, seg uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ks := k.byKey[key]; ks != nil && (seg == 0 || ks.seg == seg) {
		*ks = keyState{}
	}
}

// dropStale forgets key's segment seg if it was learnt in history (or in
// an unknown one): a claim of it was made on knowledge of another history
// of the store than the one it is in (claimOfHistory).
func (k *keys) dropStale(key string, seg uint64, history string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ks := k.byKey[key]; ks != nil && ks.seg == seg && sameKnown(ks.history, history) {
		*ks = keyState{}
	}
}

// loseAll forgets every key for good, once the store records another span
// than this engine's (segments.loseSpan): no gate is learnt again, and se
// (the first such error) is what lostSpan returns from then on.
func (k *keys) loseAll(se *SpanError) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lost.Store(true)
	if k.lostErr == nil {
		k.lostErr = se
	}
	for _, ks := range k.byKey {
		*ks = keyState{}
	}
}

// lostSpan is the *SpanError that made this engine lose its span (loseAll),
// nil if it has not.
func (k *keys) lostSpan() error {
	if !k.lost.Load() {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lostErr
}

// noteGap records, after forgetAll, that epoch of key was found missing
// with no floor that counts above it.
func (k *keys) noteGap(key string, epoch uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.state(key).gap = epoch
}

// clearGap forgets key's gap if it is still gap: the claim below it was
// found (top).
func (k *keys) clearGap(key string, gap uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ks := k.byKey[key]; ks != nil && ks.gap == gap {
		ks.gap = 0
	}
}

// noteStray records that until then (store time) a start of key meets the
// gates of a segment of another history (segments.noteStray).
func (k *keys) noteStray(key string, until time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.state(key).strayUntil = until
}

// learnOwn records that claim c held with every lower claim ended: every
// epoch of its segment below it has ended, a floor this process can vouch
// for.
func (k *keys) learnOwn(c *Claim) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ks := k.state(c.Key)
	if ks.seg == c.Seg && c.Epoch > ks.own.Epoch {
		ks.own = Floor{Epoch: c.Epoch, Nonce: c.Nonce, Seg: c.Seg}
	}
}

// floorOf returns the floor of the gate that covers key's segment seg, as
// this process knows it (zero if it knows none).
func (k *keys) floorOf(key string, seg uint64) Floor {
	ks := k.snapshot(key)
	if ks.seg != seg {
		return Floor{}
	}
	return ks.floor
}

// noteMine remembers c, inserted at sent, so that a prune deletes its
// documents without reading it.
func (k *keys) noteMine(c *Claim, sent time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ks := k.state(c.Key)
	if ks.seg != c.Seg {
		return
	}
	if ks.mine == nil {
		ks.mine = make(map[uint64]mineRec)
	}
	if len(ks.mine) < maxMine {
		ks.mine[c.Epoch] = mineRec{nonce: c.Nonce, sent: sent}
	}
}

// mineBetween copies, under the lock, this process's claims of segment
// seg with epochs in [lo, end). A snapshot shares the key's map, which
// noteMine and notePruned change under the lock while a prune of another
// release reads it.
func (k *keys) mineBetween(key string, seg, lo, end uint64) map[uint64]mineRec {
	k.mu.Lock()
	defer k.mu.Unlock()
	ks := k.byKey[key]
	if ks == nil || ks.seg != seg {
		return nil
	}
	mine := make(map[uint64]mineRec)
	for epoch, r := range ks.mine {
		if epoch >= lo && epoch < end {
			mine[epoch] = r
		}
	}
	return mine
}

// notePruned records that key's segment seg has been pruned below to (0:
// unchanged), and wholly below the floor of its gate of bucket b.
func (k *keys) notePruned(key string, seg uint64, b int64, to uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ks := k.state(key)
	if ks.seg != seg {
		return
	}
	ks.pruned = max(ks.pruned, b)
	if to > ks.prunedTo {
		ks.prunedTo = to
		for epoch := range ks.mine {
			if epoch < to {
				delete(ks.mine, epoch)
			}
		}
	}
}
