package leader

import (
	"context"

	"github.com/go-dsync/dsync/internal/plant"
)

// Draining a Partition member (Drain): a drained member counts with
// weight 0, so the assignment gives it no shard; the shards it owns move
// the way every shard moves (it releases one once the member the shard is
// assigned to waits for it), and none comes back while it stays drained.
// The assignment reads the drain directives, not the drained member's
// acknowledgement, so a drained member that is stuck or cut off is
// drained all the same. When every live member is drained no shard is
// assigned to anyone, and the members that own shards keep them: a drain
// never leaves a shard without an owner.

// readDrained reads the members drained in this partition, once per
// heartbeat beside the members' status: nil, and no read, when the member
// store serves no Directives.
func (p *Partition) readDrained(ctx context.Context) (map[string]bool, error) {
	ds, ok := p.members.(Directives)
	if !ok {
		return nil, nil
	}
	all, err := ds.Directives(ctx, p.name)
	if err != nil {
		return nil, err
	}
	return Drained(all), nil
}

// drainWeight is the weight the assignment gives member id of weight w:
// 0 when drained. When plant.DrainOnlyOwned is planted (a negative
// control) it keeps w, and the drained member avoids only the shards it
// owns now (drainAvoids), so it can take another.
func drainWeight(drained map[string]bool, id string, w float64) float64 {
	if drained[id] && !plantedDrainOnlyOwned() {
		return 0
	}
	return w
}

// drainAvoids reports whether the planted DrainOnlyOwned keeps shard s
// from its owner id, drained.
func (st *memberStatuses) drainAvoids(s int, id string) bool {
	return plantedDrainOnlyOwned() && st.drained[id] && st.view.Shards[s].Member == id
}

func plantedDrainOnlyOwned() bool { return plant.On && plant.Is(plant.DrainOnlyOwned) }
