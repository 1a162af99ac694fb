package leader

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/internal/plant"
)

// plantedLost is the channel a term's watch takes for the loss of its
// lease: nil, which never fires, when plant.LeaderKeepsTerm is planted (a
// negative control of integration/apisim; plant.On is false in every other
// build, and this is lost).
func plantedLost(lost <-chan struct{}) <-chan struct{} {
	if plant.On && plant.Is(plant.LeaderKeepsTerm) {
		return nil
	}
	return lost
}

// campaignShard is how a Partition campaigns for shard election e:
// Campaign. When plant.PartitionSkipsWait is planted (a negative control
// of integration/apisim) it returns at once, before the campaign is
// won, with a context that ends when the campaign fails or its term ends: the
// shard's function then runs beside the shard's previous owner.
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

// plantedSkipWait reports whether plant.TransferSkipsWait is planted: a
// Transfer then releases without waiting for its candidate to be next,
// so whoever queued first leads next.
func plantedSkipWait() bool { return plant.On && plant.Is(plant.TransferSkipsWait) }

// plantedReleasesFirst reports whether plant.TransferReleasesFirst is
// planted, and then takes the giving up of term t: a Transfer then
// releases the lease before it cancels the term's context (a TTL/10
// apart, plantedPause), so the next leader starts while this one's
// context lives.
func plantedReleasesFirst(t *term) bool {
	return plant.On && plant.Is(plant.TransferReleasesFirst) && t.givingUp.CompareAndSwap(false, true)
}

// plantedPause sleeps d: the window a planted bug holds open.
func plantedPause(d time.Duration) { time.Sleep(d) }

// plantedNewer is whether Observe's poll sends what it read (info, err)
// after last when plant.ObserveEmitsOnChange is planted (a negative
// control of integration/apisim): whenever it differs from last,
// nobody leading read as the zero Info, which it then sends. ok is false
// when it is not planted.
func plantedNewer(info *Info, err *error, last Info) (newer, ok bool) {
	if !plant.On || !plant.Is(plant.ObserveEmitsOnChange) {
		return false, false
	}
	if errors.Is(*err, ErrNoLeader) {
		*info, *err = Info{}, nil
	}
	return *err == nil && (info.Token != last.Token || info.Rev != last.Rev), true
}

// plantedPriorityIgnored reports whether plant.PriorityIgnored is
// planted: waiting candidates then never step aside for a better one,
// and leaders never preempt.
func plantedPriorityIgnored() bool { return plant.On && plant.Is(plant.PriorityIgnored) }

// plantedPreemptAtBeat reports whether plant.PreemptAtBeat is planted:
// a leader then preempts only at a heartbeat after the delay, never at
// its end.
func plantedPreemptAtBeat() bool { return plant.On && plant.Is(plant.PreemptAtBeat) }

// plantedGateSkipped reports whether plant.VersionGateSkipped is
// planted: a candidate whose claim holds then begins its term whatever
// versions are live.
func plantedGateSkipped() bool { return plant.On && plant.Is(plant.VersionGateSkipped) }

// plantedShardStallStaysOwned reports whether a stalled shard's run is
// listed as owned (plant.ShardStallStaysOwned).
func plantedShardStallStaysOwned() bool { return plant.On && plant.Is(plant.ShardStallStaysOwned) }

// plantedDrainOnlyOwned reports whether plant.DrainOnlyOwned is planted:
// a drained member keeps the shards it owns (see memberStatuses.drainAvoids).
func plantedDrainOnlyOwned() bool { return plant.On && plant.Is(plant.DrainOnlyOwned) }
