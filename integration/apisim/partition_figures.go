package apisim

import "fmt"

// PartitionFigures are what CheckPartition judged.
type PartitionFigures struct {
	Joins, Leaves, Crashes int
	Pauses                 int // pauses of a process while a member of it lived
	Terms, Moves           int // terms begun; those that began on another member than the shard's previous term
	// Windows: quiet spells long enough to judge ownership and balance
	// in; Changes: pairs of them around one membership change, whose
	// moves were judged; MinMoves: the least moves those changes needed.
	Windows, Changes, MinMoves int
	// Skipped: ownership, balance and moves were not judged: the run
	// was not calm, or the processes disagree on the bucket span (so
	// some members cannot campaign at all).
	Skipped bool
	Drain   DrainFigures // the operator's drains (PromiseDrain)
	// Views: the views of the partition its watchers reported
	// (PromisePartitionWatch); ViewsBack: the shards of those views whose
	// token went back (checkPartitionWatch), FirstBack the first of them.
	Views, ViewsBack int
	FirstBack        string
	// OutageSpells: store outages judged for shards staying with their
	// owners (checkPartitionOutages).
	OutageSpells int
}

// Add adds o to f.
func (f *PartitionFigures) Add(o PartitionFigures) {
	f.Joins += o.Joins
	f.Leaves += o.Leaves
	f.Crashes += o.Crashes
	f.Pauses += o.Pauses
	f.Terms += o.Terms
	f.Moves += o.Moves
	f.OutageSpells += o.OutageSpells
	f.Windows += o.Windows
	f.Changes += o.Changes
	f.MinMoves += o.MinMoves
	f.Drain.Add(o.Drain)
	f.Views += o.Views
	f.ViewsBack += o.ViewsBack
	if f.FirstBack == "" {
		f.FirstBack = o.FirstBack
	}
}

func (f PartitionFigures) String() string {
	return fmt.Sprintf("%d joins, %d graceful leaves, %d crashes, %d pauses of a member's process; %d terms, %d shards moved; %d quiet windows judged, %d single changes judged for moves (%d moves needed); %v; %d views watched (%d shards' tokens went back); %d store outages judged for shards staying",
		f.Joins, f.Leaves, f.Crashes, f.Pauses, f.Terms, f.Moves, f.Windows, f.Changes, f.MinMoves, f.Drain, f.Views, f.ViewsBack, f.OutageSpells)
}
