package leader_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// TestOptionsFitTheirConstructor: one Option type serves NewElection and
// NewPartition, so each constructor refuses, by name, an option only the
// other takes, and takes those both take.
func TestOptionsFitTheirConstructor(t *testing.T) {
	p := newProc(t)
	electionOnly := map[string]leader.Option{
		"WithPollInterval": leader.WithPollInterval(time.Second),
		"WithVersion":      leader.WithVersion("v1"),
		"WithValue":        leader.WithValue("addr"),
		"OnElected":        leader.OnElected(func(leader.Info) {}),
		"OnLost":           leader.OnLost(func(error) {}),
		"OnNewLeader":      leader.OnNewLeader(func(leader.Info) {}),
		"WithObserver":     leader.WithObserver(func(leader.Transition) {}),
		"WithPriority":     leader.WithPriority(1),
		"WithPreemption":   leader.WithPreemption(time.Second),
		"WithVersionRule":  leader.WithVersionRule(nil),
	}
	for name, opt := range electionOnly {
		t.Run("NewPartition/"+name, func(t *testing.T) {
			part, err := leader.NewPartition(p.c, "jobs", 2, leader.WithMembers(p.members), opt)
			want := "leader: " + name + " is not an option of NewPartition"
			if err == nil || err.Error() != want || part != nil {
				t.Fatalf("NewPartition(%s) = %v, %v; want %q", name, part, err, want)
			}
		})
	}
	t.Run("NewElection/WithWeight", func(t *testing.T) {
		e, err := leader.NewElection(p.c, "cron", leader.WithWeight(2))
		want := "leader: WithWeight is not an option of NewElection"
		if err == nil || err.Error() != want || e != nil {
			t.Fatalf("NewElection(WithWeight) = %v, %v; want %q", e, err, want)
		}
	})
	both := []leader.Option{leader.WithMembers(p.members), leader.WithHeartbeatInterval(time.Second), leader.WithProgressDeadline(time.Minute), quiet}
	if _, err := leader.NewElection(p.c, "cron", both...); err != nil {
		t.Errorf("NewElection with the options both take: %v", err)
	}
	part, err := leader.NewPartition(p.c, "jobs", 2, append(both, leader.WithWeight(2))...)
	if err != nil {
		t.Fatalf("NewPartition with its options: %v", err)
	}
	_ = part.Close()
}

// TestNewPartitionRefusesBadInput: a bad argument or option value is an
// error at construction, naming what is wrong, not a surprise at Run.
func TestNewPartitionRefusesBadInput(t *testing.T) {
	p := newProc(t)
	ms := leader.WithMembers(p.members)
	tests := []struct {
		name   string
		part   string
		shards int
		opts   []leader.Option
		want   string
	}{
		{"empty name", "", 2, []leader.Option{ms}, "needs a name and at least one shard"},
		{"no shard", "jobs", 0, []leader.Option{ms}, "needs a name and at least one shard"},
		{"no member store", "jobs", 2, nil, "NewPartition needs a member store (WithMembers)"},
		{"nil member store", "jobs", 2, []leader.Option{leader.WithMembers(nil)}, "nil member store"},
		{"nil option", "jobs", 2, []leader.Option{ms, nil}, "nil option"},
		{"zero weight", "jobs", 2, []leader.Option{ms, leader.WithWeight(0)}, "weight must be positive and finite, got 0"},
		{"negative weight", "jobs", 2, []leader.Option{ms, leader.WithWeight(-1)}, "weight must be positive and finite, got -1"},
		{"NaN weight", "jobs", 2, []leader.Option{ms, leader.WithWeight(math.NaN())}, "weight must be positive and finite, got NaN"},
		{"infinite weight", "jobs", 2, []leader.Option{ms, leader.WithWeight(math.Inf(1))}, "weight must be positive and finite, got +Inf"},
		{"zero heartbeat", "jobs", 2, []leader.Option{ms, leader.WithHeartbeatInterval(0)}, "heartbeat interval must be positive, got 0s"},
		{"negative heartbeat", "jobs", 2, []leader.Option{ms, leader.WithHeartbeatInterval(-time.Second)}, "heartbeat interval must be positive, got -1s"},
		{"negative progress deadline", "jobs", 2, []leader.Option{ms, leader.WithProgressDeadline(-time.Second)}, "progress deadline must not be negative"},
		{"progress deadline below MinTTL", "jobs", 2, []leader.Option{ms, leader.WithProgressDeadline(time.Millisecond)}, "WithProgressDeadline(1ms)"},
		{"nil logger", "jobs", 2, []leader.Option{ms, leader.WithLogger(nil)}, "nil logger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			part, err := leader.NewPartition(p.c, tt.part, tt.shards, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || part != nil {
				t.Fatalf("NewPartition = %v, %v; want an error containing %q", part, err, tt.want)
			}
		})
	}
	if part, err := leader.NewPartition(nil, "jobs", 2, ms); err == nil || part != nil {
		t.Fatalf("NewPartition(nil client) = %v, %v; want an error", part, err)
	}
}
