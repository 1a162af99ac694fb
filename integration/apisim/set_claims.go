package apisim

import (
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/event"
)

// What the store held of the lock sets, as the oracle saw it land: each
// Set claim's life, the notes of waits and the records of deadlocks
// broken. It is the simulation's own record of who held and who waited
// (check_set_cycles.go, check_sets.go), read from the documents as they
// landed, not through any reader of the library: a Set claim (one with
// a Waiter) lives from its landing to its end marker's, its delete, or
// the emptying of the collections.

// ClaimLife is one claim of a lock set in the store.
type ClaimLife struct {
	Key   string // as stored
	Epoch uint64
	Nonce string
	// Waiter is the Set's identity; Owner the member's Mutex.
	Waiter, Owner, Session string
	Proc                   int
	// Landed and Ended are when it landed and ended (zero: it never
	// did, while the run lasted).
	Landed, Ended time.Time
	// Lost is when its process told its observer that its hold was lost
	// (event.Observer.Lost; zero: never): a member lost is left to run
	// out, and is its Set's no more (it starts again, with new claims),
	// though the claim stays in the store until it runs out.
	Lost time.Time
}

// liveAt reports whether c was in the store, unended, at t.
func (c *ClaimLife) liveAt(t time.Time) bool {
	return !t.Before(c.Landed) && (c.Ended.IsZero() || t.Before(c.Ended))
}

// setsAt reports whether c was its Set's at t: in the store, unended,
// and not lost.
func (c *ClaimLife) setsAt(t time.Time) bool {
	return c.liveAt(t) && (c.Lost.IsZero() || t.Before(c.Lost))
}

// NoteRec is a Set's note of its wait (driver.Wait) that landed, and
// when.
type NoteRec struct {
	Proc int
	At   time.Time
	Note driver.Wait
}

// BreakRec is a record of a deadlock broken (driver.Deadlock) that
// landed, and when.
type BreakRec struct {
	Proc   int
	At     time.Time
	Record driver.Deadlock
}

// claimLives is the oracle's index of the Set claims' lives: byEnd by
// their end IDs, byID by their claim IDs (the latest of each); ended are
// the end markers of the Sets' keys that landed before their claims (a
// claim held back lands after its withdrawal).
type claimLives struct {
	byEnd map[string]*ClaimLife
	byID  map[string]*ClaimLife
	ended map[string]bool
}

func newClaimLives() claimLives {
	return claimLives{byEnd: map[string]*ClaimLife{}, byID: map[string]*ClaimLife{}, ended: map[string]bool{}}
}

// liveDoc records what d, which landed now from p, does to the Sets'
// claims: a claim with a Waiter begins a life, a marker ends one. Called
// with w.mu held.
func (w *world) liveDoc(p *proc, d driver.Doc) {
	if !w.sets || !contains(setKeys, d.Key) {
		return
	}
	now, end := time.Now(), driver.EndID(d.Key, d.Epoch, d.Nonce)
	switch d.Kind {
	case driver.KindClaim:
		if d.Waiter == "" {
			return
		}
		c := &ClaimLife{Key: d.Key, Epoch: d.Epoch, Nonce: d.Nonce, Waiter: d.Waiter, Owner: d.Owner, Session: d.Session, Proc: p.id, Landed: now}
		if w.lives.ended[end] {
			c.Ended = now
		}
		w.lives.byEnd[end], w.lives.byID[driver.ClaimID(d.Key, d.Epoch)] = c, c
		w.hist.Lives = append(w.hist.Lives, c)
	case driver.KindRelease, driver.KindWithdraw, driver.KindDead:
		if c := w.lives.byEnd[end]; c != nil {
			endLife(c, now)
		} else {
			w.lives.ended[end] = true
		}
	}
}

// setClaimedWithin reports whether a lock set had a claim of key in the
// store at some time in (a, b].
func (h *History) setClaimedWithin(key string, a, b time.Time) bool {
	for _, c := range h.Lives {
		if c.Key == key && !c.Landed.After(b) && (c.Ended.IsZero() || c.Ended.After(a)) {
			return true
		}
	}
	return false
}

// deletedDocs ends the lives of the claims among ids, deleted now.
func (w *world) deletedDocs(ids []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if c := w.lives.byID[id]; c != nil {
			endLife(c, time.Now())
		}
	}
}

// emptiedLives ends every life, at the emptying of the collections (now).
// Called with w.mu held.
func (w *world) emptiedLives() {
	for _, c := range w.lives.byEnd {
		endLife(c, time.Now())
	}
	w.lives = newClaimLives()
}

func endLife(c *ClaimLife, t time.Time) {
	if c.Ended.IsZero() {
		c.Ended = t
	}
}

// memberLost records that p told of the loss of hold h now: if it is a
// Set member's, its claim is its Set's no more.
func (w *world) memberLost(p *proc, h event.Held) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.lives.byID[driver.ClaimID(h.Key, h.Token)]; c != nil && c.Proc == p.id && c.Lost.IsZero() {
		c.Lost = time.Now()
	}
}

// noted records that p's note n landed now.
func (w *world) noted(p *proc, n driver.Wait) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hist.Notes = append(w.hist.Notes, NoteRec{Proc: p.id, At: time.Now(), Note: n})
}

// broke records that p's record d of a deadlock broken landed now.
func (w *world) broke(p *proc, d driver.Deadlock) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hist.Breaks = append(w.hist.Breaks, BreakRec{Proc: p.id, At: time.Now(), Record: d})
	w.fig.SetBreaks++
}

// finishSets gives each Set run its identity, from the claims of its
// members that landed. Called with w.mu held, after the run.
func (w *world) finishSets() {
	waiter := make(map[string]string) // by member's owner
	for _, c := range w.hist.Lives {
		waiter[c.Owner] = c.Waiter
	}
	for _, r := range w.hist.SetRuns {
		for _, c := range r.Calls {
			for _, o := range c.Owners {
				if id := waiter[o]; id != "" && r.ID == "" {
					r.ID = id
				}
			}
		}
	}
}
