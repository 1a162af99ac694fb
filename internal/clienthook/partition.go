package clienthook

// PartitionSettings are a leader.Partition's test-only settings; zero
// fields are left as they are. They ride on the MemberStore given to
// leader.NewPartition (PartitionCarrier).
type PartitionSettings struct {
	// MemberID replaces the member's ID (Partition.ID), which is
	// otherwise unique and random, so that a seeded simulation, which
	// draws it from its seed, assigns the shards the same way each time
	// it runs. It must be unique among the partition's members.
	MemberID string
}

// PartitionCarrier is a MemberStore that carries PartitionSettings to
// the Partition made over it. Users cannot implement it: its method
// returns a type of this package.
type PartitionCarrier interface {
	PartitionSettings() PartitionSettings
}
