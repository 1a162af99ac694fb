// Package leaderhook lets tests inside this module set what only tests
// may set on a leader.Partition: its member ID, which a seeded
// simulation draws from its seed so that a seed assigns the shards the
// same way each time it runs. The setting rides on the MemberStore given
// to leader.NewPartition. It is internal, so users cannot reach it (nor
// implement Carrier, whose method returns a type of this package), and
// it holds no state.
package leaderhook

// Settings are a Partition's test-only settings; zero fields are left as
// they are.
type Settings struct {
	// MemberID replaces the member's ID (Partition.ID), which is
	// otherwise unique and random. It must be unique among the
	// partition's members.
	MemberID string
}

// Carrier is a MemberStore that carries Settings to the Partition made
// over it.
type Carrier interface {
	PartitionSettings() Settings
}
