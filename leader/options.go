package leader

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// An Option configures an Election (NewElection) or a Partition
// (NewPartition).
//
// NewElection takes every option but WithWeight. NewPartition takes
// WithMembers (which it needs), WithHeartbeatInterval,
// WithProgressDeadline, WithLogger and WithWeight. A constructor returns
// an error for an option it does not take, and for a bad value.
type Option func(*config) error

// A target is the constructor an option is given to, or, as a set, those
// that take it.
type target uint8

const (
	forElection target = 1 << iota
	forPartition
)

func (t target) String() string {
	if t == forPartition {
		return "NewPartition"
	}
	return "NewElection"
}

type config struct {
	target            target        // the constructor being configured
	members           MemberStore   // nil: none (WithMembers)
	heartbeatInterval time.Duration // 0: the Client's renew interval
	pollInterval      time.Duration
	version           string
	value             string
	logger            *slog.Logger
	onElected         func(Info)
	onLost            func(cause error)
	onNewLeader       func(Info)
	observer          func(Transition)
	progress          time.Duration // 0: off (WithProgressDeadline)
	steer             steerConfig   // steer_options.go
	weight            float64       // a Partition's (WithWeight)
}

// takes returns an error unless the constructor being configured takes
// option name, which ts take.
func (c *config) takes(name string, ts target) error {
	if c.target&ts == 0 {
		return fmt.Errorf("leader: %s is not an option of %v", name, c.target)
	}
	return nil
}

// Defaults of an Election's options.
const (
	// DefaultPollInterval is how often Observe and OnNewLeader ask who leads.
	DefaultPollInterval = 500 * time.Millisecond
)

func newConfig(t target, opts []Option, client *dsync.Client) (config, error) {
	c := config{target: t, pollInterval: DefaultPollInterval, logger: clienthook.ClientParams(client).Logger, weight: 1}
	for _, opt := range opts {
		if opt == nil {
			return config{}, errors.New("leader: nil option")
		}
		if err := opt(&c); err != nil {
			return config{}, err
		}
	}
	if c.steer.on() && c.members == nil {
		return config{}, errors.New("leader: WithPriority, WithPreemption and WithVersionRule need a member store (WithMembers)")
	}
	if c.heartbeatInterval == 0 {
		c.heartbeatInterval = clienthook.ClientParams(client).RenewInterval
	}
	if t == forPartition && c.members == nil {
		return config{}, errors.New("leader: NewPartition needs a member store (WithMembers): its members agree on the assignment through it")
	}
	return c, nil
}

// memberMaxAge is how long a member counts as live after its last
// heartbeat: three missed heartbeats.
func (c *config) memberMaxAge() time.Duration { return 3 * c.heartbeatInterval }

// WithMembers sets the MemberStore where the member status is kept.
//
// The stores are leadermongo.NewStore on MongoDB, and
// leadertest.NewMemoryMembers in tests. Default: none. A Partition needs
// one: its members agree on the assignment through it. Without one, an
// Election still elects, and Leader, Observe and OnNewLeader report who
// leads (without Version and Value). Members and Proclaim then return
// ErrNoMembers.
func WithMembers(ms MemberStore) Option {
	return func(c *config) error {
		if err := c.takes("WithMembers", forElection|forPartition); err != nil {
			return err
		}
		if ms == nil {
			return errors.New("leader: nil member store")
		}
		c.members = ms
		return nil
	}
}

// WithHeartbeatInterval sets how often a member refreshes its status.
//
// Default: the Client's renew interval (dsync.ClientWithRenewInterval). d must
// be positive.
//
// An Election's candidate writes its member status every interval.
// Members counts a member live for three intervals after its last
// heartbeat.
//
// A Partition's member reads the members' status and recomputes the
// assignment every interval. It writes its own status at once when it
// queued for a shard. It writes it at its next heartbeat when it won or
// handed over one, and otherwise every other interval. A member counts
// as live for four intervals after its last write. When the members'
// intervals differ, that is the longest interval among them: each
// member's status says its own. A member whose own status reads as aged
// out assigns itself nothing while others read as live (they take its
// shards). When nobody does, it counts itself alone. Observe reads the
// members' status once per interval.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(c *config) error {
		if err := c.takes("WithHeartbeatInterval", forElection|forPartition); err != nil {
			return err
		}
		if d <= 0 {
			return fmt.Errorf("leader: heartbeat interval must be positive, got %v", d)
		}
		c.heartbeatInterval = d
		return nil
	}
}

// WithPollInterval sets how often Observe and OnNewLeader ask the store
// who leads. Default: DefaultPollInterval (500 ms).
func WithPollInterval(d time.Duration) Option {
	return func(c *config) error {
		if err := c.takes("WithPollInterval", forElection); err != nil {
			return err
		}
		if d <= 0 {
			return fmt.Errorf("leader: poll interval must be positive, got %v", d)
		}
		c.pollInterval = d
		return nil
	}
}

// WithVersion sets the application version this candidate reports.
// It goes in its member status and, when it leads, in Info.
// Default: empty.
func WithVersion(v string) Option {
	return func(c *config) error {
		if err := c.takes("WithVersion", forElection); err != nil {
			return err
		}
		c.version = v
		return nil
	}
}

// MaxValueSize bounds an advertised value (WithValue, Proclaim), in bytes.
// The value is stored in the member status, which readers of the leader
// decode.
const MaxValueSize = 16 << 10

// WithValue sets the value this candidate advertises when it leads
// (Info.Value).
//
// The value holds from the start of each of its terms until it proclaims
// another (Proclaim). Default: empty. At most MaxValueSize bytes.
func WithValue(v string) Option {
	return func(c *config) error {
		if err := c.takes("WithValue", forElection); err != nil {
			return err
		}
		if len(v) > MaxValueSize {
			return fmt.Errorf("leader: value of %d bytes, more than %d", len(v), MaxValueSize)
		}
		c.value = v
		return nil
	}
}

// WithLogger sets where background errors are logged (at Warn level):
// failed renewals, releases and heartbeats. Default: the Client's logger
// (dsync.ClientWithLogger), slog.Default() unless set.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if err := c.takes("WithLogger", forElection|forPartition); err != nil {
			return err
		}
		if l == nil {
			return errors.New("leader: nil logger")
		}
		c.logger = l
		return nil
	}
}

// OnElected sets a function called with this candidate's Info each time it
// becomes leader.
//
// It is called before Campaign returns. It is a convenience over the
// context Campaign returns, for code coming from callback-style libraries.
// It must not block.
func OnElected(f func(Info)) Option {
	return func(c *config) error {
		if err := c.takes("OnElected", forElection); err != nil {
			return err
		}
		if f == nil {
			return errors.New("leader: nil OnElected callback")
		}
		c.onElected = f
		return nil
	}
}

// OnLost sets a function called with the cause each time this candidate's
// leadership ends.
//
// The cause is ErrLeadershipLost, ErrResigned, ErrTransferred,
// ErrPreempted, or the parent context's cause. The function is called
// after the leadership context is cancelled. A convenience over that
// context. It must not block.
func OnLost(f func(cause error)) Option {
	return func(c *config) error {
		if err := c.takes("OnLost", forElection); err != nil {
			return err
		}
		if f == nil {
			return errors.New("leader: nil OnLost callback")
		}
		c.onLost = f
		return nil
	}
}

// OnNewLeader sets a function called, in order, for every new leader seen.
//
// It sees the leaders while this Election campaigns or leads (until
// Close), this candidate included. A convenience over Observe. It must
// not block.
func OnNewLeader(f func(Info)) Option {
	return func(c *config) error {
		if err := c.takes("OnNewLeader", forElection); err != nil {
			return err
		}
		if f == nil {
			return errors.New("leader: nil OnNewLeader callback")
		}
		c.onNewLeader = f
		return nil
	}
}

// WithProgressDeadline ends a term whose work reports no progress
// (Progress) within d.
//
// For a Partition the deadline is each shard's: a shard's run whose fn
// reports no progress within d ends, the member tells the others at once,
// and the shard is assigned to another member. This member does not run
// it again until fn returns.
//
// The term ends as a lost lease ends one: its context is cancelled with
// the cause ErrStalled. Its lease is released after the head start a lost
// lease gives the work to stop, so that another candidate leads. The
// work's late writes are fenced by the term's token. A term's beginning
// counts as progress. Run stays in fn until fn returns: a work
// that is stuck for good needs its process restarted. Default: 0, no
// deadline. It is the term's lease's dsync.WithProgressDeadline, and
// refused as that refuses it.
func WithProgressDeadline(d time.Duration) Option {
	return func(c *config) error {
		if err := c.takes("WithProgressDeadline", forElection|forPartition); err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("leader: progress deadline must not be negative, got %v", d)
		}
		c.progress = d
		return nil
	}
}

// WithWeight sets a Partition member's weight. Default: 1.
//
// A member of weight 2 takes twice the shards of one of weight 1. w must
// be positive and finite: a member that should take no shard is drained
// (operator.Drain), or does not join.
func WithWeight(w float64) Option {
	return func(c *config) error {
		if err := c.takes("WithWeight", forPartition); err != nil {
			return err
		}
		if !(w > 0) || math.IsInf(w, 1) {
			return fmt.Errorf("leader: weight must be positive and finite, got %v", w)
		}
		c.weight = w
		return nil
	}
}
