package lockset

import (
	"context"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/waitgraph"
	"github.com/go-dsync/dsync/internal/plant"
)

// The decisions of lock sets that a bug planted for the negative
// controls of integration/apisim changes (package internal/plant): one
// function each, named by what it decides, whose body is the rule and
// then what the planted bug makes of it. In every build without -tags
// dsync_planted plant.On is false, and each is the rule alone.

// takingOrder returns the places of members in the order a Set takes
// them: by stored key (byStored). LockSetOutOfOrder takes them as given,
// so that two Sets given two keys in opposite orders may each hold one
// and wait for the other.
func takingOrder(members []Member) []int {
	idx := byStored(members)
	if plant.On && plant.Is(plant.LockSetOutOfOrder) {
		for i := range idx {
			idx[i] = i
		}
	}
	return idx
}

// victimOf is the Set of c that gives up its wait: the youngest
// (waitgraph.Cycle.Victim). LockSetVictimOldest names the oldest: the
// least (Since, Set) of c's notes; LockSetNoVictim none.
func victimOf(c waitgraph.Cycle) string {
	if plant.On && plant.Is(plant.LockSetNoVictim) {
		return ""
	}
	if !plant.On || !plant.Is(plant.LockSetVictimOldest) || len(c) == 0 {
		return c.Victim()
	}
	v := &c[0].Note
	for i := range c {
		n := &c[i].Note
		if n.Since.Before(v.Since) || n.Since.Equal(v.Since) && n.Set < v.Set {
			v = n
		}
	}
	return v.Set
}

// cycleThrough is what one check from the set id finds: a cycle through
// it, found and verified (waitgraph.Check). LockSetChainAsCycle, when
// there is none, takes the first wait of a chain from the set, to a
// claim another Set holds, for a cycle of one edge.
func cycleThrough(ctx context.Context, r reader, id string) (waitgraph.Cycle, bool, error) {
	c, found, err := waitgraph.Check(ctx, r, id)
	if !plant.On || !plant.Is(plant.LockSetChainAsCycle) || found || err != nil {
		return c, found, err
	}
	n, ok, err := r.LatestWait(ctx, id)
	if err != nil || !ok {
		return nil, false, err
	}
	hs, err := r.Holders(ctx, driver.ClaimRef{Key: n.Key, Epoch: n.Epoch, Nonce: n.Nonce})
	if err != nil {
		return nil, false, err
	}
	for _, h := range hs {
		if h.Waiter != "" && h.Waiter != id {
			return waitgraph.Cycle{{Note: n, Holder: h}}, true, nil
		}
	}
	return nil, false, nil
}
