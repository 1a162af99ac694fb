package integration

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/faultproxy"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// issueTTL is the TTL of TestCutAloneStillReplaced's long form, the one
// issue 75 names. The short form, which CI also runs beside CPU burners,
// uses the suite's (ttl): at 2 s, on a machine loaded at four times its
// cores, holders lost their holds to late renewals before their cut, so
// often that the rounds ran out.
const issueTTL = 2 * time.Second

// cutBound is how long after a cut holder's deadline its waiter must
// have taken over: the takeover comes TTL/20 after it and a read or two
// later, and on a loaded machine a few renewals and polls later still
// (beside CPU burners and other suites, over 5 s at times); and it is
// below the shortest grace a rule for store-wide outages could credit a
// holder (MongoDB's election timeout, 10 s), so that a rule that
// credited a cut to the one holder it hit would fail it, where
// takeoverBound might not.
const cutBound = 9 * time.Second

// A holder cut off alone is replaced on time: keys each held by a
// process of their own, with a waiter in another, every process behind
// a proxy of its own; each round cuts one holder's connection (a full
// partition), while the store stays up for the others, who renew all
// along. The cut holder's waiter takes over once the hold's lease has
// run out in server time, never before (the cut holder's last recorded
// deadline plus TTL/20, as for a killed holder, checkTakeover), within
// cutBound of that deadline, with a higher token; and the history
// of every key shows no two valid holds at once (cluster.check). Time
// from the cut, and from the send of the cut holder's last confirmed
// renewal, to the takeover are logged (the second is what issue 75 asks
// to stay within TTL + 1 s), as are holds of the other keys lost
// meanwhile (a renewal late on a loaded machine).
//
// Three pairs, three rounds, the suite's TTL; four pairs, six rounds
// and issueTTL with DSYNC_LONG=1, where every process has an outage
// grace (outageGrace, 30 s) and locks again on Lost() without Unlock
// (riding): the cut is not an outage of the store, so the cut holder's
// lock again must fail (the store's record shows it was up for the
// others), and a takeover that waited for a grace credited to the cut
// holder would fail cutBound. (Not in the short form: a grace slows
// each takeover by a forced renewal and a read of that record, and the
// short form runs in `go test work`.)
func TestCutAloneStillReplaced(t *testing.T) {
	npairs, cfg := 3, pairConfig(ttl)
	if longtest.Enabled() {
		npairs, cfg = 4, riding(pairConfig(issueTTL))
	}
	cutTTL := cfg.TTL
	c := sharedCluster(t, cfg)
	c.viaProxy = true
	c.hints = false // takeovers by expiry: no hint tells them
	ps := startPairs(c, npairs, npairs)
	margin := int64(cutTTL / 20)
	var fromCut, fromRenewal []time.Duration
	// cut is a round's cut holder's hold, its waiter's hold after it,
	// and when the cut began.
	type cut struct {
		h, nx history.Event
		t0    int64
	}
	var cuts []cut
	disturbed := 0
	n, missed := rounds(6, 40), 0
	for round := 0; round < n; {
		key := ps.keys[round%len(ps.keys)]
		h := ps.queued(key)[key]
		p := c.procOf(h)
		if p == nil {
			t.Fatalf("no live process for the hold of %s by %s (pid %d)", key, h.Worker, h.PID)
		}
		time.Sleep(randDuration(cutTTL/3, cutTTL/2)) // a renewal or two first
		if ps.ended(h) {
			// Lost before the cut (a renewal late on a loaded machine):
			// the round tells nothing, and is played again.
			if missed++; missed > 3*n {
				t.Fatalf("%d holders lost their holds before their cut: the machine is too slow for a %v TTL", missed, cutTTL)
			}
			t.Logf("%s lost its hold of %s (token %d) before the cut: the round is played again", h.Worker, key, h.Token)
			continue
		}
		px := c.proxies[p.name]
		t0 := history.Now()
		px.Partition(faultproxy.Both)
		nx, _ := c.await(0, cutTTL+takeoverBound, "takeover of "+key, func(e history.Event) bool {
			return e.Ev == history.EvAcquire && e.Key == key && e.Token > h.Token
		})
		_, _ = c.await(0, cutTTL+takeoverBound, "loss signal of the cut holder", func(e history.Event) bool {
			return e.Ev == history.EvLost && e.PID == h.PID && e.Key == key && e.Token == h.Token
		})
		px.Heal()
		t1 := history.Now()
		c.fault("partition", p, t0, t1)
		cuts = append(cuts, cut{h: h, nx: nx, t0: t0})

		dl := ps.deadline(h)
		renewed := dl - int64(cutTTL) + margin // the send of its last confirmed renewal
		switch {
		case nx.PID == h.PID:
			t.Errorf("%s: the cut holder %s held again (token %d) before its waiter", key, h.Worker, nx.Token)
		case nx.T < dl+margin-int64(2*time.Millisecond):
			t.Errorf("%s: %s took over (token %d) %v after the cut holder's deadline: before its TTL had run out (margin %v)",
				key, nx.Worker, nx.Token, ms(nx.T-dl), time.Duration(margin))
		case time.Duration(nx.T-dl) > cutBound:
			t.Errorf("%s: %s took over %v after the cut holder's deadline, more than %v", key, nx.Worker, ms(nx.T-dl), cutBound)
		}
		others := ps.lostBetween(key, t0, t1)
		disturbed += others
		fromCut = append(fromCut, time.Duration(nx.T-t0))
		fromRenewal = append(fromRenewal, time.Duration(nx.T-renewed))
		t.Logf("cut %s off (holding %s, token %d): %s took over with token %d, %v after the cut, %v after the cut holder's last confirmed renewal; %d holds of other keys lost meanwhile",
			h.Worker, key, h.Token, nx.Worker, nx.Token, ms(nx.T-t0), ms(nx.T-renewed), others)
		round++
	}
	// Healed, each cut holder's lock again (it rides outages through)
	// learns that its hold ended: it must not take it back. (One before
	// its cut may have taken back a hold lost to a late renewal, with the
	// store up: a loaded machine's.) Looked for once the rounds are over:
	// meanwhile the next rounds ran.
	for _, ct := range cuts {
		if !cfg.Relock {
			break
		}
		re, _ := c.await(0, retakeBound, "the cut holder's lock again", func(e history.Event) bool {
			return e.Ev == history.EvRelock && e.PID == ct.h.PID && e.Key == ct.h.Key && e.Token == ct.h.Token && e.T > ct.t0
		})
		if re.Value != 0 {
			t.Errorf("%s: the cut holder %s took its hold back (token %d) after its waiter %s held with token %d",
				ct.h.Key, ct.h.Worker, re.Value, ct.nx.Worker, ct.nx.Token)
		}
	}
	c.check()
	within := 0
	for _, d := range fromRenewal {
		if d <= cutTTL+time.Second {
			within++
		}
	}
	t.Logf("TTL %v, %d pairs, %d cuts: takeover after the cut %s; after the last confirmed renewal %s (%d of %d within TTL + 1 s); holds of other keys lost during the cuts: %d",
		cutTTL, len(ps.keys), len(fromCut), fmtQuantiles(fromCut), fmtQuantiles(fromRenewal), within, len(fromRenewal), disturbed)
}

// lostBetween counts the losses signalled from t0 to t1 of holds of keys
// other than key.
func (ps *pairs) lostBetween(key string, t0, t1 int64) int {
	n := 0
	ps.c.log.each(func(ev history.Event) {
		if ev.Ev == history.EvLost && ev.Key != key && ev.T >= t0 && ev.T <= t1 {
			n++
		}
	})
	return n
}
