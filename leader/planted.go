package leader

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/plant"
	"github.com/go-dsync/dsync/leader/internal/lease"
)

// The decisions of elections and partitions that a bug planted for the
// negative controls of integration/apisim changes (package
// internal/plant): one function each, named by what it decides, whose
// body is the rule and then what the planted bug makes of it. In every
// build without -tags dsync_planted plant.On is false, and each is the
// rule alone.

// leaseLost is the channel a term's watch takes for the loss of its
// lease: lost. LeaderKeepsTerm takes nil, which never fires.
func leaseLost(lost <-chan struct{}) <-chan struct{} {
	if plant.On && plant.Is(plant.LeaderKeepsTerm) {
		return nil
	}
	return lost
}

// campaignShard is how a Partition campaigns for shard election e:
// Campaign. PartitionSkipsWait returns at once, before the campaign is
// won, with a context that ends when the campaign fails or its term
// ends: the shard's function then runs beside the shard's previous owner.
func campaignShard(ctx context.Context, e *Election) (context.Context, error) {
	if !plant.On || !plant.Is(plant.PartitionSkipsWait) {
		return e.Campaign(ctx)
	}
	early, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		if tctx, err := e.Campaign(ctx); err == nil {
			<-tctx.Done()
		}
	}()
	return early, nil
}

// nextFound reports whether nextAlready found to's claim next after the
// term's already (next, from a read that succeeded): Transfer then hands
// over at once. TransferSkipsWait never does, and skips the wait that
// follows (awaitNext), so whoever queued first leads next.
func nextFound(next bool) bool {
	return next && !(plant.On && plant.Is(plant.TransferSkipsWait))
}

// awaitNext waits until to's claim is the next after term t's
// (readUntilNext). TransferSkipsWait does not wait.
func (x *handoff) awaitNext(ctx context.Context, t *term, to string) error {
	if plant.On && plant.Is(plant.TransferSkipsWait) {
		return nil
	}
	return x.readUntilNext(ctx, t, to)
}

// handOver ends term t with cause for Transfer: its context cancelled,
// then its lease released (cancelThenRelease). TransferReleasesFirst
// first releases the lease, a TTL/10 before it cancels the context, so
// the next leader starts while this one's context lives.
func (x *handoff) handOver(ctx context.Context, t *term, cause error) error {
	if plant.On && plant.Is(plant.TransferReleasesFirst) && t.givingUp.CompareAndSwap(false, true) {
		x.e.release(ctx, t)
		time.Sleep(clienthook.ClientParams(x.e.client).TTL / 10) // the window the bug holds open
	}
	return x.cancelThenRelease(ctx, t, cause)
}

// newer reports whether Observe's poll sends what it read (info, err)
// after last: a leader of a higher token, or, with values, a higher Rev
// of the same token. ObserveEmitsOnChange sends it whenever it differs
// from last, nobody leading read as the zero Info, which it then sends.
func newer(info *Info, err *error, last Info, values bool) bool {
	rule := *err == nil && (info.Token > last.Token || values && info.Token == last.Token && info.Rev > last.Rev)
	if !plant.On || !plant.Is(plant.ObserveEmitsOnChange) {
		return rule
	}
	if errors.Is(*err, ErrNoLeader) {
		*info, *err = Info{}, nil
	}
	return *err == nil && (info.Token != last.Token || info.Rev != last.Rev)
}

// givesWayBehind reports whether this waiting candidate steps aside for
// a better one that waits behind it (betterBehind, which notes that it
// does). PriorityIgnored: never.
func (s *steerer) givesWayBehind(ms []Member, q []lease.Claim) bool {
	return !(plant.On && plant.Is(plant.PriorityIgnored)) && s.betterBehind(ms, q)
}

// givesWayTo reports whether the leader gives way to to, the best
// candidate behind it that it gives way to ("" if none: bestBetter).
// PriorityIgnored: never.
func givesWayTo(to string) bool {
	return to != "" && !(plant.On && plant.Is(plant.PriorityIgnored))
}

// armAtDelayEnd sets the leader's heartbeat to preempt to to when the
// preemption delay ends, in d (arm). PreemptAtBeat does not: the leader
// then preempts only at a heartbeat after the delay.
func (s *steerer) armAtDelayEnd(d time.Duration, t *term, to string, since time.Time) {
	if plant.On && plant.Is(plant.PreemptAtBeat) {
		return
	}
	s.arm(d, t, to, since)
}

// versionGated reports whether a candidate whose claim holds passes the
// pre-term gate of WithVersionRule (passes). VersionGateSkipped begins
// its term whatever versions are live.
func (s *steerer) versionGated() bool {
	return s.e.cfg.steer.versionRule && !(plant.On && plant.Is(plant.VersionGateSkipped))
}

// listedStalled reports whether this member's status lists r's shard as
// stalled (ownStatus): once its run stalled. ShardStallStaysOwned lists
// it as owned still.
func (r *shardRun) listedStalled() bool {
	return r.stalled && !(plant.On && plant.Is(plant.ShardStallStaysOwned))
}

// drainWeight is the weight the assignment gives member id of weight w:
// 0 when drained. DrainOnlyOwned keeps w, and the drained member avoids
// only the shards it owns now (drainAvoids), so it can take another.
func drainWeight(drained map[string]bool, id string, w float64) float64 {
	if drained[id] && !(plant.On && plant.Is(plant.DrainOnlyOwned)) {
		return 0
	}
	return w
}

// drainAvoids reports whether DrainOnlyOwned keeps shard s from its
// owner id, drained (under the rule, no: drainWeight gave id no shard).
func (st *memberStatuses) drainAvoids(s int, id string) bool {
	return plant.On && plant.Is(plant.DrainOnlyOwned) && st.drained[id] && st.view.Shards[s].Member == id
}

// shardTakesBack reports whether a shard's run whose term ended with
// cause campaigns again to take it back: if its lock was kept
// (keepsLock). ShardGivesUpInOutage never does: the shard is resigned
// and campaigned for anew, with a new token, after every outage.
func shardTakesBack(cause error) bool {
	return keepsLock(cause) && !(plant.On && plant.Is(plant.ShardGivesUpInOutage))
}
