package leader

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/leader/internal/rank"
)

// The steering options: which candidate should lead when several are
// live (WithPriority, WithVersionRule), and whether a leader gives way to
// a better one (WithPreemption). They act only through who queues for
// the lease and when the leader releases it (steer.go), so the lease's
// grant rule, and with it every guarantee of a term, is the lock's.

type steerConfig struct {
	priority    int
	prioritySet bool
	preempt     time.Duration
	preemptSet  bool
	versionRule bool
	versions    func(a, b string) int // the rule's compare; set when versionRule
}

// on reports whether any steering option is set: without one an
// Election reads and writes nothing for steering.
func (s *steerConfig) on() bool { return s.prioritySet || s.preemptSet || s.versionRule }

// rule is the order of candidates the options give.
func (s *steerConfig) rule() rank.Rule {
	if !s.versionRule {
		return rank.Rule{}
	}
	return rank.Rule{Versions: s.versions}
}

// WithPriority sets this candidate's priority, reported in its member
// status (Member.Priority).
//
// Candidates that set a steering option (WithPriority, WithPreemption,
// WithVersionRule) keep the lease's queue ordered by rank. At each
// heartbeat, a candidate waiting for the lease steps aside when a live
// candidate of strictly higher priority waits behind it: it withdraws its
// claim and claims again, behind. So the highest-priority candidate
// queued leads at the next handover (the leader's Resign, Transfer,
// Close, or lost lease). A leader of lower priority keeps leading unless
// it sets WithPreemption. Default: 0. It needs a member store
// (WithMembers).
func WithPriority(p int) Option {
	return func(c *config) error {
		if err := c.takes("WithPriority", forElection); err != nil {
			return err
		}
		c.steer.priority, c.steer.prioritySet = p, true
		return nil
	}
}

// WithPreemption makes this candidate, while it leads, give way to a
// better candidate after delay.
//
// A better candidate is one of higher priority (WithPriority), or of a
// newer version under WithVersionRule. The delay runs from when the best
// such candidate sent its claim (its claim's QueuedAt), by the store's
// clock as this process reads it, never sooner: a claim that lands late has
// waited less. Once it has passed, the leader transfers its leadership to
// that candidate as Transfer does, with the cause ErrPreempted. Its
// leadership context is cancelled, and the lease released (under Run, once
// fn has returned), so the two never lead at once. When the heartbeat's
// read of the queue that saw the candidate showed it next, the leader hands
// over at the delay's end without reading the queue again. A candidate that
// withdrew after that read leaves the leadership to the one behind it.
//
// The leader sees the queue at its heartbeats (and at once when its term
// begins), and the candidates queued ahead of the better one step aside
// at theirs (WithPriority). So the better candidate leads within one
// handoff of the delay's end (plus the round trips of a step aside) when:
//   - every candidate sets a steering option;
//   - delay is longer than a heartbeat interval;
//   - the candidates joined a heartbeat or more apart.
//
// The queue is then in order by the delay's end. Otherwise it leads
// later. The Transfer waits for the candidates ahead to step aside,
// reading the queue once per poll interval (WithPollInterval). When
// several join at once, a handover to one can make another step aside
// before the leader sees it is better.
//
// A candidate that stops being better, or live, before then is not
// preempted to. A preemption under way to one is stopped when the leader
// sees a better one queued, which is preempted to at its own delay's end.
// So the leadership moves once, to the best, unless the first handover
// was done by then.
//
// Default: no preemption by priority; under WithVersionRule, a newer
// version preempts as soon as the leader sees it queued (delay 0). It
// needs a member store (WithMembers).
func WithPreemption(delay time.Duration) Option {
	return func(c *config) error {
		if err := c.takes("WithPreemption", forElection); err != nil {
			return err
		}
		if delay < 0 {
			return fmt.Errorf("leader: preemption delay must not be negative, got %v", delay)
		}
		c.steer.preempt, c.steer.preemptSet = delay, true
		return nil
	}
}

// WithVersionRule makes leadership follow the newest version (WithVersion)
// among the live candidates.
//
// A candidate does not wait for the lease while a live member of a newer
// version exists: it withdraws its claim, and claims again once none is
// live. A leader preempts to the best candidate of the newest version
// queued, after the WithPreemption delay (0 unless set). A candidate
// whose claim comes to hold reads the members once more before it begins
// its term. If a newer member is live then, it releases the lease at
// once and begins no term. Versions rank first, then priorities.
//
// cmp compares two versions as cmp.Compare does. A nil cmp compares them
// as semantic versions ("v1.2.3", "1.2.3-rc.1"): a pre-release ranks
// below its release, build metadata is ignored, and a version that does
// not parse (the empty one included) ranks below every one that does.
//
// A live member of a newer version counts whether it campaigns or not.
// While the member store cannot be read, a candidate under the rule
// neither queues nor begins a term. It needs a member store (WithMembers).
// See docs/leader-election.md for what it promises during a rolling
// upgrade, and what not.
func WithVersionRule(cmp func(a, b string) int) Option {
	return func(c *config) error {
		if err := c.takes("WithVersionRule", forElection); err != nil {
			return err
		}
		if cmp == nil {
			cmp = rank.CompareVersions
		}
		c.steer.versionRule, c.steer.versions = true, cmp
		return nil
	}
}

// ErrPreempted is the cause of a leadership context cancelled by a
// preemption. Its leader gave way to a better candidate (WithPreemption,
// WithVersionRule).
var ErrPreempted = errors.New("leader: preempted by a better candidate")
