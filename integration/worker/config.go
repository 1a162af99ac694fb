package worker

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// EnvConfig is the environment variable that carries a worker's Config as
// JSON; its presence makes the test binary a worker.
const EnvConfig = "DSYNC_INTEGRATION_WORKER"

// Modes.
const (
	ModeMutex    = "mutex"
	ModeElection = "election"
)

// Register kinds.
const (
	RegFenced   = "fenced"
	RegUnfenced = "unfenced"
)

// Config describes one worker.
type Config struct {
	Name       string        // worker name, e.g. "w1"
	URI        string        // server (or proxy) URI
	DB         string        // database
	Mode       string        // ModeMutex, ModeElection, ModeRWMutex, ModeSemaphore, ModeOnce, ModePartition, ModeKeys or ModeLockSet
	Key        string        // lock key, or election name
	TTL        time.Duration // lease TTL
	Renew      time.Duration // renew interval; 0: TTL/3
	Poll       time.Duration // backend poll interval; 0: 20 ms
	HistoryDir string        // where the history file goes
	Register   string        // RegFenced, RegUnfenced or "" (no register)
	Work       time.Duration // between the register read and the validity check
	Window     time.Duration // between the validity check and the write
	// UnlockWindow is a pause between the end of the hold and Unlock.
	UnlockWindow time.Duration
	HoldFor      time.Duration // how long to keep each hold (×0.5–1.5, random)
	Gap          time.Duration // pause between holds
	WallOffset   time.Duration // offset of the injected wall clock
	JumpStep     time.Duration // wall-clock jump per SIGUSR1
	Observe      bool          // election mode: also record Observe
	Holds        int           // stop after this many holds; 0: until told (a steered election: always until told)
	LogLevel     string        // "debug", "info", "warn" (default), "error"
	// ConnectTimeout is the client's connectTimeoutMS, which is also how
	// long the driver waits for a heartbeat; 0: 2 s.
	ConnectTimeout time.Duration
	// HintListen, if set, turns direct hints on (dsync.ClientWithHints):
	// the UDP address the worker takes them on, and HintAdvertise the one
	// it records for the others (the test's fault relay in front of it).
	// Empty, hints are off, whatever the library's default.
	HintListen, HintAdvertise string
	// Shards is the number of shards of ModePartition.
	Shards int
	// Keys is the number of keys of ModeKeys and ModeLockSet, from the
	// First-th; and of ModeMutex when above 0 (each locked in a loop of
	// its own, without a register), which locks Key alone otherwise.
	Keys, First int
	// SafetyPoll, if set, is the Client's safety poll interval
	// (dsync.ClientWithSafetyPoll); 0: the library's default.
	SafetyPoll time.Duration
	// Runs: the worker's store reads runs of a queue (driver.RunReader)
	// on FerretDB too (internal/clienthook), where it would read by ID.
	Runs bool
	// Version, Priority and Preempt steer an election (ModeElection):
	// leader.WithVersion and WithVersionRule (semantic versions) if
	// Version is set, WithPriority if Priority is, WithPreemption(Preempt)
	// if Preempt is above 0. A steered worker's terms run under
	// Election.Run (steered.go).
	Version  string
	Priority int
	Preempt  time.Duration
	// Grace is the Client's outage grace (dsync.ClientWithOutageGrace);
	// 0: the library's default (dsync.DefaultOutageGrace); negative: none.
	Grace time.Duration
	// Relock: a hold (or term) lost to a suspension of its session in an
	// outage of the store (dsync.ErrSuspended) is taken back, as issue 75
	// has a program do it: a Mutex locked again without Unlock, an
	// Election's Campaign called again without Resign. Each attempt is
	// recorded (history.EvRelock). Without it, a lost hold is unlocked
	// (a term resigned) as any other.
	Relock bool
}

// Encode returns the environment entry that makes a process a worker.
func (c Config) Encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return EnvConfig + "=" + string(b)
}

// FromEnv returns the Config in the environment, if any.
func FromEnv() (Config, bool, error) {
	s, ok := os.LookupEnv(EnvConfig)
	if !ok {
		return Config{}, false, nil
	}
	var c Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return Config{}, true, fmt.Errorf("worker: bad %s: %w", EnvConfig, err)
	}
	return c, true, nil
}
