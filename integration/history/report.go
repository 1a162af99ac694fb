package history

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Violation is a property the history breaks.
type Violation struct {
	Kind string // one of the Kind* constants
	Key  string
	Msg  string
}

func (v Violation) String() string { return v.Kind + ": " + v.Msg }

// Violation kinds.
const (
	KindOverlap     = "overlap"      // two holds of a key valid at once
	KindTokenOrder  = "token-order"  // tokens not strictly increasing in the order holds began
	KindLateLoss    = "late-loss"    // a loss signalled later than its deadline plus tolerance
	KindSilentLoss  = "silent-loss"  // a hold outlived its deadline without a loss signal
	KindLateReply   = "late-reply"   // the library's deadline went past what replies in time allow
	KindObserve     = "observe"      // an observer saw leaders out of order or a wrong owner
	KindLostUpdate  = "lost-update"  // the register lost an acknowledged increment
	KindRegister    = "register"     // the register's state contradicts the writes
	KindPhantomHold = "phantom-hold" // a hold whose events contradict each other
	KindLateUnlock  = "late-unlock"  // Unlock called after the deadline did not report the loss
	KindFIFO        = "fifo"         // a weighted hold began while claims queued before it left no room
)

// Options tune a check.
type Options struct {
	// LossTolerance is how long after its deadline a hold's loss may be
	// signalled. Default: the hold's margin (TTL/20), the part of the lease
	// the library reserves for the signal to be acted on before anyone
	// else can take over.
	LossTolerance func(h *Hold) int64
	// PredTolerance is how far the library's own deadline may exceed the
	// deadline predicted from reply times before it counts as a late
	// reply having been counted. Default 1 ms (clock conversion error).
	PredTolerance time.Duration
	// EmptyingGap, if set, compares tokens across emptyings of the store
	// (EvReset of kind ResetEmpty): a hold's token must be larger than
	// that of every conflicting hold begun more than EmptyingGap before
	// the last emptying before it (check_emptying.go). Zero: tokens are
	// compared only between resets.
	EmptyingGap time.Duration
}

func (o *Options) lossTolerance(h *Hold) int64 {
	if o != nil && o.LossTolerance != nil {
		return o.LossTolerance(h)
	}
	return h.Margin
}

func (o *Options) predTolerance() int64 {
	if o != nil && o.PredTolerance > 0 {
		return int64(o.PredTolerance)
	}
	return int64(time.Millisecond)
}

// Report is the outcome of Check.
type Report struct {
	// Holds per key, in the order they began.
	Holds    map[string][]*Hold
	NumHolds int
	// Handoffs counts consecutive holds of a key by different processes.
	Handoffs int
	// Resumes counts holds that took back their process's hold of the
	// same token, lost to an outage of the store, with no conflicting
	// hold begun in between (check_tokens.go).
	Resumes int
	// Losses counts holds whose loss was signalled; Excused those whose
	// process was paused (SIGSTOP) or stalled between the deadline and the
	// signal, which only the time it was running counts against.
	Losses  int
	Excused int
	// MaxLossLateness is the largest time from a hold's deadline to its
	// loss signal during which the process was running (negative when
	// every loss came early, e.g. a refused renewal); MaxLossHold is that
	// hold.
	MaxLossLateness time.Duration
	MaxLossHold     *Hold
	// Faults counts fault events by kind.
	Faults map[string]int
	// Stalls counts the times a worker was not scheduled for a while
	// (EvStall), MaxStall the longest.
	Stalls       int
	MaxStall     time.Duration
	Observations int
	// Proclaims counts values leaders confirmed (EvProclaim), ValuesSeen
	// the observations of a proclaimed value (a revision above 0).
	Proclaims, ValuesSeen int
	Writes                WriteStats
	// Once counts the events of Once runs (check_once.go).
	Once OnceStats
	// Sets counts lock-set grants (check_sets.go).
	Sets       int
	Violations []Violation
}

// WriteStats counts register writes by outcome.
type WriteStats struct {
	OK, Stale, Unknown int
	// LateAccepted counts accepted writes that began after their hold's
	// validity ended (a paused writer): the register is all that stands
	// between them and a lost update.
	LateAccepted int
}

// OK reports whether the history has no violation.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

func (r *Report) add(kind, key, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Kind: kind, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// Has reports whether the report holds a violation of kind.
func (r *Report) Has(kind string) bool {
	return slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Kind == kind })
}

// sortViolations puts the violations in one order whatever order the
// checks (and the maps they range over) found them in, so that two runs
// over one history report alike.
func (r *Report) sortViolations() {
	slices.SortFunc(r.Violations, func(a, b Violation) int { return cmp.Compare(a.Kind+a.Msg, b.Kind+b.Msg) })
}

// ts formats a CLOCK_MONOTONIC time for messages.
func ts(t int64) string { return fmt.Sprintf("%.6fs", float64(t)/1e9) }
