package apisim

import (
	"fmt"
	"time"
)

// Prim names the primitive a hold was made by.
type Prim string

const (
	PrimMutex    Prim = "mutex"
	PrimRead     Prim = "read"  // RWMutex.RLock
	PrimWrite    Prim = "write" // RWMutex.Lock
	PrimSem      Prim = "semaphore"
	PrimOnce     Prim = "once" // a run of a Once's function, under its hold
	PrimElection Prim = "election"
)

// exclusive reports whether a hold of p excludes every other hold of its
// key.
func (p Prim) exclusive() bool { return p != PrimRead && p != PrimSem }

// Hold is one hold of a key as the simulation saw it through the public
// API: from the moment the call that took it returned to the moment its
// holder stopped relying on it.
type Hold struct {
	ID   int
	Proc int    // the simulated process
	Who  string // the primitive value or candidate (its owner)
	Prim Prim
	Key  string // the key as stored ("dsync:rw/rw", ...)
	// Token is the hold's fencing token, as the API gave it.
	Token uint64
	// Call is when Lock (or RLock, Acquire, Campaign...) was called;
	// Start when it returned with the hold.
	Call, Start time.Time
	// Try: a TryLock's hold (FIFO says nothing of it).
	Try bool
	// Value is the owner identity of the RWMutex value that took a read
	// hold, if that value has its read linger on (empty for other holds,
	// and for values without it): only then may the read holds of one
	// value share a token, one after another, and an RLock take a claim
	// that landed before a queued writer's (its lingering read claim).
	Value string
	// Weight and Limit: a semaphore hold's units and the limit its
	// process was configured with.
	Weight, Limit int64

	// Landed is when the hold's claim landed in the store, as its
	// process's store saw it (zero: it never did).
	Landed time.Time
	// Session is the session named by the hold's claim.
	Session string
	// KnownSince is when the first claim of the key by the hold's process
	// landed (zero: none before the hold's). A process that knew a key
	// before an emptying may act on what it cached of it after (see
	// CheckFIFO).
	KnownSince time.Time
	// Deadline is the latest the hold can be valid: its session's last
	// renewal confirmed in time, sent plus TTL minus TTL/20 (the oracle's,
	// an upper bound of the library's own deadline).
	Deadline time.Time
	// Ended is when its holder began to give it up: Unlock (or RUnlock,
	// Release, Resign) began, or its Client began to close. Zero: never.
	Ended time.Time
	// LostAt is when Lost() was seen closed (for an election: the
	// leadership context cancelled). Zero: never.
	LostAt time.Time
	// LostSlack is how late Lost() may close past Deadline: the
	// scheduling slack, plus the time the process was paused at the
	// deadline.
	LostSlack time.Duration
	// Paused: the process was paused between the hold's deadline and
	// its start. "A paused process can act after its lease ended": such
	// a hold is the documented limit, not a broken promise of Lock (its
	// Lost() must still close).
	Paused bool
	// PausedAtDeadline: the process was paused at the hold's deadline,
	// so it could not learn of its loss then.
	PausedAtDeadline bool
	// Progress: the hold had a progress deadline (progress.go); nil
	// otherwise.
	Progress *ProgressLog
	// Resumes is the hold this one took back after an outage of the
	// store (relock.go): the same claim, so the same token; nil
	// otherwise.
	Resumes *Hold
	// Set is the lock set whose member the hold is (sets.go); nil
	// otherwise.
	Set *SetRun
}

// End is when the hold stopped being valid: the earliest of its end by
// its holder, Lost() and its deadline. An election's term ends when its
// context is cancelled or it resigns: its deadline is the job of the
// Lost() check, so that a leader that outlives its lease is also seen
// beside the next one; but a leader paused at its deadline is the
// documented limit ("a paused process can act after its lease ended":
// it learns of the loss when it resumes, which CheckLost judges), and
// its term ends at the deadline.
func (h *Hold) End() time.Time {
	end := h.Deadline
	if (h.Prim == PrimElection && !h.PausedAtDeadline) || end.IsZero() {
		end = farFuture
	}
	for _, t := range []time.Time{h.Ended, h.LostAt} {
		if !t.IsZero() && t.Before(end) {
			end = t
		}
	}
	return end
}

var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

func (h *Hold) String() string {
	return fmt.Sprintf("#%d p%d %s %s %s#%d [%v, %v)", h.ID, h.Proc, h.Who, h.Prim, h.Key, h.Token, h.Start.Format(tf), h.End().Format(tf))
}

// tf shows the fake clock's times (which begin at midnight).
const tf = "15:04:05.000"

// Run is one run of a Once's function.
type Run struct {
	Proc       int
	Key        string // the Once's key as stored ("dsync:once/k")
	Token      uint64 // TokenOf the function's context
	Start, End time.Time
	OK         bool // the function returned nil
	// Deadline is the latest its hold could be valid (as Hold's; zero:
	// unknown). A run that began at or after it is CheckHeld's to judge
	// (a paused process may act after its lease ended): no run for Once's
	// promises.
	Deadline time.Time
}

// valid reports whether the run began while its hold could be valid.
func (r *Run) valid() bool { return r.Deadline.IsZero() || r.Start.Before(r.Deadline) }

// Do is one call of Once.Do.
type Do struct {
	Proc         int
	Key          string
	Call, Return time.Time
	Err          error
	// Run is the run of the function this call made, if it made one.
	Run *Run
	// Confirmed lists when the replies that carried this run's record
	// (its insert's, or a read's that found it) came to its process.
	Confirmed []time.Time
	// Deadline is the latest the run's hold could be valid (as Hold's).
	Deadline time.Time
}

// History is what a simulation saw: every hold, run and call, and the
// operator's emptyings.
type History struct {
	Holds []*Hold
	Runs  []*Run
	Dos   []*Do
	// Actions are the operations of the Options' Actors.
	Actions []*Action
	// Emptyings are when the operator emptied the collections.
	Emptyings []time.Time
	// ProcFaults are the faults of the processes, each over its time.
	ProcFaults []ProcFault
	// Terms are the terms of partition shards (partition_sim.go).
	Terms []*Term
	// Observations are what the watchers saw of who leads (watch.go),
	// and QueueReads each of their statuspage.Reader.Queue reads.
	Observations []*Observation
	QueueReads   []*QueueRead
	// PartitionReports are what the partition's watchers saw of it
	// (partition_watch.go).
	PartitionReports []*PartitionReport
	// Waits are the blocking Locks of Mutexes and RWMutexes.
	Waits []*Wait
	// Calm: the run was calm (Options.Calm).
	Calm bool
	// Outages are the store-wide outages (outage.go), OutageGrace the
	// Clients' grace, and Relocks the calls that took a hold or term
	// lost in an outage back (relock.go).
	Outages     []Outage
	OutageGrace time.Duration
	Relocks     []*Relock
	// Stamps are the store's times at which it applied a renewal with
	// the record of up-time, by session (the oracle's, store_uptime.go).
	Stamps []Stamp
	// Opens are the session documents inserted in an outage run.
	Opens []Open
	// TTLs are the processes' TTLs.
	TTLs []time.Duration
	// Upgrade is what the rolling-upgrade actor did (upgrade.go); nil:
	// the run had none.
	Upgrade *UpgradeRun
	// SetRuns are the lock sets' lives (sets.go); Lives the lives of
	// their claims in the store, Notes the notes of their waits and
	// Breaks the records of deadlocks broken that landed
	// (set_claims.go).
	SetRuns []*SetRun
	Lives   []*ClaimLife
	Notes   []NoteRec
	Breaks  []BreakRec
}

// ProcFault is one fault of a process, from From to To: "pause",
// "unreachable" (the store), "hang" (the store, for it), "step" (its
// clock, at one instant).
type ProcFault struct {
	Proc     int
	Kind     string
	From, To time.Time
	// Key and KeyWaits: stalled gates (stalledGates) keep their key
	// waiting after they land, up to three bucket spans of their sender
	// after they were sent (docs/operations.md): KeyWaits is that bound,
	// from From (zero for other faults).
	Key      string
	KeyWaits time.Time
}

// emptiedBetween reports whether the collections were emptied in (a, b].
func (h *History) emptiedBetween(a, b time.Time) bool {
	for _, e := range h.Emptyings {
		if e.After(a) && !e.After(b) {
			return true
		}
	}
	return false
}

// lastEmptying returns the last emptying at or before t.
func (h *History) lastEmptying(t time.Time) (time.Time, bool) {
	var last time.Time
	for _, e := range h.Emptyings {
		if !e.After(t) && e.After(last) {
			last = e
		}
	}
	return last, !last.IsZero()
}

// Violation is a broken promise: which, and the evidence.
type Violation struct {
	Promise string
	What    string
}

func (v Violation) String() string { return v.Promise + ": " + v.What }
