package leader

// A zero Election or Partition (declared rather than made by its
// constructor) has no Client, no member store and no lease: used, it
// would block forever or fail later in a goroutine of its own. As with
// the misuse of a sync type, each of its methods panics at once instead,
// saying so.

func (e *Election) mustBeMade() {
	if e == nil || e.client == nil {
		panic("leader: Election used without NewElection")
	}
}

func (p *Partition) mustBeMade() {
	if p == nil || p.members == nil {
		panic("leader: Partition used without NewPartition")
	}
}
