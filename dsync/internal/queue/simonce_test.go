package queue_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/integration/history"
)

// The Once family: on some seeds every owner also runs a once worker, as
// dsync.Once.Do does. It takes slot keys in turn (a new one every
// simOnceSlot, as a job scheduled across replicas would), reads the done
// record before claiming, claims the key exclusively, reads the record
// again under the hold (DoneUnder), and only if there is none "runs" (a
// sleep that a loss may cut short; one run in five fails). A run that
// succeeds sends the record (MarkDone) through the delaying network, again
// with the same nonce while the hold is valid, and releases the hold only
// once the record is confirmed: a record may land late, after the hold
// ended and after other owners' reads. The checker's Once rules
// (history.checkOnce) see the runs, successes, confirmations and reads.

// simOnceSlot is how long a slot key is current.
const simOnceSlot = 3 * time.Second

// simOnce says whether a seed runs once workers, and how long their done
// records are kept: 0 (for ever), an hour (longer than a run, so that
// compaction must keep them all), or simOnceForget (a slot's record
// expires and is compacted while workers that lag still take the slot,
// and run again: what forgetting means). The choices come from a stream
// of their own, so that the other seeds run as before.
type simOnce struct {
	on   bool
	keep time.Duration
}

func newSimOnce(seed int64) *simOnce {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x0ce))
	return &simOnce{on: rng.IntN(3) == 0, keep: []time.Duration{0, time.Hour, simOnceForget}[rng.IntN(3)]}
}

// simOnceForget is the short keep of done records: shorter than a slot,
// so that a record is compacted (idle age past its expiry) while workers
// lagging up to four slots still take its key.
const simOnceForget = 3 * time.Second

// simOnceLagP is how often a once worker takes a slot up to four slots
// old, as a replica whose tick came late would: the keys of old slots are
// idle, and sweepers compact them, but their done records must stay.
const simOnceLagP = 0.25

// simOnceForgetLagP is simOnceLagP where records expire (simOnceForget):
// more workers come back to a slot after its record was compacted, to
// run again, while others' late deletes of the record may still land.
const simOnceForgetLagP = 0.6

// doneRecordsBefore returns the IDs of the done records of slot keys not
// in keep sent before sentBefore: what a compaction that forgets done
// records (simBugCompactForgetsDone) deletes too.
func (s *sim) doneRecordsBefore(sentBefore time.Time, keep []string) []string {
	var ids []string
	for slot := range s.now/simOnceSlot + 1 {
		key := fmt.Sprintf("once%d", slot)
		if slices.Contains(keep, key) {
			continue
		}
		if d, found, _ := s.server.store.Get(bg, queue.DoneID(key)); found && d.Sent.Before(sentBefore) {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// spawnOnce starts o's once worker, on a seed that runs them.
func (s *sim) spawnOnce(o *owner) {
	if s.once.on {
		s.spawn(o, o.onceWorker)
	}
}

func (o *owner) onceWorker(a *actor) {
	s, ctx := o.s, a.ctx()
	for s.now < simLength {
		ss := o.sess
		if ss == nil || ss.lease.Retired() {
			a.sleep(10 * time.Millisecond)
			continue
		}
		slot := s.now / simOnceSlot
		lagP := simOnceLagP
		if s.once.keep == simOnceForget {
			lagP = simOnceForgetLagP
		}
		if lag := 1 + time.Duration(s.rng.IntN(4)); s.rng.Float64() < lagP && lag <= slot {
			slot -= lag
			s.stats.onceLags++
		}
		key := fmt.Sprintf("once%d", slot)
		sent := s.now
		rec, found, err := o.eng.ReadDone(ctx, key)
		if err != nil {
			a.sleep(20 * time.Millisecond)
			continue
		}
		if found {
			// Done: wait for the next slot (and look again now and then,
			// to see a record that a reset or a restore took away).
			o.onceSeen(history.EvOnceSkip, rec, sent)
			if s.compacted[key] {
				s.stats.doneKept++
			}
			next := (s.now/simOnceSlot+1)*simOnceSlot - s.now
			a.sleep(min(next, time.Second) + time.Duration(s.rng.IntN(200))*time.Millisecond)
			continue
		}
		c, err := o.eng.Claim(ctx, key, o.name, ss.id, queue.ExclusiveTerms, false)
		if errors.Is(err, queue.ErrReset) {
			s.stats.storeResets++
		}
		if err != nil {
			a.sleep(time.Duration(5+s.rng.IntN(25)) * time.Millisecond)
			continue
		}
		o.claims++
		o.onceHold(a, c, ss)
		o.claims--
		a.sleep(time.Duration(s.rng.IntN(100)) * time.Millisecond)
	}
}

// onceSeen records that a request sent at sent found or confirmed the
// done record rec, with its expiry in simulated time (DL; 0: none),
// unless a reset of the store fell between the request and now (the
// record read may belong to the history before it).
func (o *owner) onceSeen(ev string, rec queue.Doc, sent time.Duration) {
	if o.s.server.lastReset >= sent {
		return
	}
	var exp int64
	if !rec.Exp.IsZero() {
		exp = int64(rec.Exp.Sub(o.s.t0))
	}
	o.record(history.Event{Ev: ev, Key: rec.Key, Token: rec.Token, T: int64(o.s.now), DL: exp})
}

// valid reports whether ss's lease still covers a hold.
func (o *owner) valid(ss *simSession) bool {
	return !ss.lease.Retired() && o.mono() < ss.lease.Deadline()
}

// onceHold waits until c holds, and does what Once.Do does under the
// hold; or gives the claim up after a while, as a cancelled Do does.
func (o *owner) onceHold(a *actor, c *queue.Claim, ss *simSession) {
	s, ctx := o.s, a.ctx()
	start, patience := s.now, time.Duration(500+s.rng.IntN(3000))*time.Millisecond
	for {
		if ss.lease.Retired() {
			_ = o.eng.End(ctx, c, false)
			return
		}
		head, b, err := o.eng.Walk(ctx, c)
		if errors.Is(err, queue.ErrReset) {
			s.stats.storeResets++
			return
		}
		if queue.IsLapsed(err) {
			s.stats.lapses++
			return // the engine gave the claim up: its segment lapsed
		}
		if err != nil {
			a.sleep(10 * time.Millisecond)
			continue
		}
		if head {
			break
		}
		if s.now-start > patience {
			_ = o.eng.End(ctx, c, false)
			return
		}
		wait := simPoll
		if u := b.ExpiresAt.Sub(ownerClock{o}.ServerNow().Earliest) + time.Millisecond; u > 0 && u < wait {
			wait = u
		}
		a.sleep(wait)
	}
	if !o.valid(ss) {
		_ = o.eng.End(ctx, c, false)
		return
	}
	o.holds[c] = ss
	o.record(history.Event{Ev: history.EvAcquire, Key: c.Key, Token: c.Epoch, T: int64(s.now), DL: int64(o.deadline(ss)), Src: history.SrcLib})
	release := func() {
		o.record(history.Event{Ev: history.EvEnd, Key: c.Key, Token: c.Epoch, T: int64(s.now), Lost: ss.lease.Retired()})
		delete(o.holds, c)
		_ = o.eng.End(ctx, c, true)
	}
	sent := s.now
	rec, found, err := o.eng.DoneUnder(ctx, c)
	switch {
	case err != nil:
		release()
		return
	case found:
		o.onceSeen(history.EvOnceSkip, rec, sent)
		release()
		return
	}
	if s.server.lastReset >= sent {
		release() // the read may have seen the history before a reset
		return
	}
	o.record(history.Event{Ev: history.EvOnceRun, Key: c.Key, Token: c.Epoch, T: int64(sent)})
	a.sleep(time.Duration(s.rng.IntN(300)) * time.Millisecond)
	if !o.valid(ss) || s.rng.IntN(5) == 0 {
		// The run was cut short by the loss (its context cancelled), or
		// failed.
		release()
		return
	}
	o.record(history.Event{Ev: history.EvOnceOK, Key: c.Key, Token: c.Epoch, T: int64(s.now)})
	if s.rng.IntN(20) == 0 {
		// The process stops between the run's success and its record (a
		// pause past the lease): the record may never be confirmed in the
		// hold, and the next holder runs again.
		s.pause(o, simTTL+time.Duration(s.rng.Int64N(int64(simTTL))))
		a.sleep(time.Microsecond)
	}
	nonce := fmt.Sprintf("d%s", c.Nonce)
	for o.valid(ss) {
		sent := s.now
		rec, _, err := o.eng.MarkDone(ctx, c, nonce, s.once.keep)
		if err != nil {
			a.sleep(10 * time.Millisecond)
			continue
		}
		o.onceSeen(history.EvOnceDone, rec, sent)
		release()
		return
	}
	// The record is unconfirmed and the hold is over: the claim ends with
	// its session, not released (a release would let the next holder in
	// before the record may have landed).
	o.record(history.Event{Ev: history.EvEnd, Key: c.Key, Token: c.Epoch, T: int64(s.now), Lost: true})
	delete(o.holds, c)
}

// addOnce adds the Once counts of b to a.
func addOnce(a *history.OnceStats, b history.OnceStats) {
	a.Runs += b.Runs
	a.OK += b.OK
	a.Done += b.Done
	a.Skips += b.Skips
	a.Reruns += b.Reruns
}
