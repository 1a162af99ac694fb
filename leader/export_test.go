package leader

// SetResignedHook sets resignedHook until the returned func restores it.
func SetResignedHook(f func()) (restore func()) {
	resignedHook = f
	return func() { resignedHook = nil }
}

// SetKeepingHook sets keepingHook until the returned func restores it.
func SetKeepingHook(f func()) (restore func()) {
	keepingHook = f
	return func() { keepingHook = nil }
}

// SetPartitionWonHook sets partitionWonHook until the returned func
// restores it.
func SetPartitionWonHook(f func(shard int)) (restore func()) {
	partitionWonHook = f
	return func() { partitionWonHook = nil }
}

// GiveUpShard cancels the campaign of p's shard s, as Run does when it
// stops waiting for a shard (assigned elsewhere, or Run ending).
func GiveUpShard(p *Partition, s int) {
	p.mu.Lock()
	r := p.running[s]
	p.mu.Unlock()
	r.cancel()
}
