package leader_test

import (
	"context"
	"testing"

	"github.com/go-dsync/dsync/leader"
)

// A zero Election or Partition, or a nil one, panics at once on every
// method with a message that names the constructor, rather than block
// forever or fail later in a goroutine of its own.
func TestZeroValuesPanic(t *testing.T) {
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	shardFn := func(context.Context, int) error { return nil }
	const (
		election  = "leader: Election used without NewElection"
		partition = "leader: Partition used without NewPartition"
	)
	elections := map[string]func(e *leader.Election){
		"Name":     func(e *leader.Election) { e.Name() },
		"ID":       func(e *leader.Election) { e.ID() },
		"Campaign": func(e *leader.Election) { _, _ = e.Campaign(ctx) },
		"Resign":   func(e *leader.Election) { _ = e.Resign(ctx) },
		"IsLeader": func(e *leader.Election) { e.IsLeader() },
		"Leader":   func(e *leader.Election) { _, _ = e.Leader(ctx) },
		"Members":  func(e *leader.Election) { _, _ = e.Members(ctx) },
		"Run":      func(e *leader.Election) { _ = e.Run(ctx, fn) },
		"Close":    func(e *leader.Election) { _ = e.Close() },
		"Observe":  func(e *leader.Election) { e.Observe(ctx) },
		"Proclaim": func(e *leader.Election) { _ = e.Proclaim(ctx, "v") },
	}
	partitions := map[string]func(p *leader.Partition){
		"ID":      func(p *leader.Partition) { p.ID() },
		"Run":     func(p *leader.Partition) { _ = p.Run(ctx, shardFn) },
		"Resign":  func(p *leader.Partition) { _ = p.Resign(ctx) },
		"Close":   func(p *leader.Partition) { _ = p.Close() },
		"View":    func(p *leader.Partition) { _, _ = p.View(ctx) },
		"Observe": func(p *leader.Partition) { p.Observe(ctx) },
	}
	for name, call := range elections {
		for _, e := range []*leader.Election{new(leader.Election), nil} {
			t.Run("Election."+name, func(t *testing.T) { wantPanic(t, election, func() { call(e) }) })
		}
	}
	for name, call := range partitions {
		for _, p := range []*leader.Partition{new(leader.Partition), nil} {
			t.Run("Partition."+name, func(t *testing.T) { wantPanic(t, partition, func() { call(p) }) })
		}
	}
}

// wantPanic checks that f panics with message want.
func wantPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != want {
			t.Errorf("panicked with %v, want %q", r, want)
		}
	}()
	f()
}
