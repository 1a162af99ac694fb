// Package history records what the integration workers did, one JSON
// line per event, and checks the merged record of all of them against
// what dsync promises (Check, CheckWrites). Every timestamp is a
// CLOCK_MONOTONIC reading (Now), which all processes on a machine share
// and which wall-clock changes do not affect.
package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Event kinds. A hold is described by several events that share the
// worker's PID, the key and the token, written as they happen, so that a
// worker killed at any moment leaves a usable prefix.
const (
	// EvAcquire: the hold began (Lock or Campaign returned) at T, valid
	// until DL.
	EvAcquire = "acquire"
	// EvDeadline: the hold's local deadline moved to DL (a renewal was
	// confirmed in time).
	EvDeadline = "deadline"
	// EvLost: the worker saw the loss signal (Lost() closed, or the
	// leadership context cancelled with ErrLeadershipLost) at T; DL is the
	// deadline that was in force.
	EvLost = "lost"
	// EvEnd: the worker stopped relying on the hold at T (written before
	// Unlock/Resign is called). Lost tells whether the loss signal had
	// fired by then.
	EvEnd = "end"
	// EvReleased: Unlock/Resign was called at T, with DL the deadline in
	// force then (0 if unknown); Err is what it returned, Lost whether that
	// was ErrLost.
	EvReleased = "released"
	// EvWriteStart and EvWrite: a write of Value to the register began,
	// and ended with Outcome.
	EvWriteStart = "wstart"
	EvWrite      = "write"
	// EvObserve: Election.Observe reported a leader with Token and Owner,
	// advertising Adv at revision Rev.
	EvObserve = "observe"
	// EvProclaim: the leader of term Token confirmed the value Adv at
	// revision Rev (Election.Proclaim returned nil).
	EvProclaim = "proclaim"
	// EvPoll: a direct Leader query sent at T answered Token and Owner.
	EvPoll = "poll"
	// EvFault: the test injected a fault of Kind on PID from T to End.
	EvFault = "fault"
	// EvStall: the worker's stall monitor, asleep until T, woke only at
	// End: the process was not scheduled in between (an overloaded host).
	// Like a pause, a stall excuses a late loss signal.
	EvStall = "stall"
	// EvStart and EvExit: a worker process started or exits normally.
	EvStart = "start"
	EvExit  = "exit"
	// EvWindow: the worker passed its validity check and is about to
	// write (the moment a pause does the most harm).
	EvWindow = "window"
	// EvUnlockWindow: the worker ended its hold and is about to Unlock.
	EvUnlockWindow = "unlock-window"
	// EvReset: at T the store was emptied or restored from a backup (Kind
	// says which). Tokens, and the leaders observers see, may start
	// again from then on; no two holds may overlap across it.
	EvReset = "reset"
	// EvCounts: what the worker counted since it began, written every so
	// often while it changes: its hint transport's counts (Hints:
	// hint.Stats; nil if hints are off) and the runs of a queue its
	// engine read (Runs). The checker ignores it; the suite adds up each
	// process's last.
	EvCounts = "counts"
	// EvRelock: a hold (or term) of Token, lost to a suspension of its
	// session in an outage of the store, was taken back (Lock, or
	// Campaign, called again from T to End): Value is the token held
	// again (0 if none), Err the error if not. The checker ignores it
	// (the hold taken back has an EvAcquire of its own); the tests read
	// it.
	EvRelock = "relock"
	// EvMember: the candidate Owner, of Version and Priority, saw its own
	// member status listed live (leader.Election.Members) for the first
	// time at T. The checker ignores it.
	EvMember = "member"
)

// Deadline sources.
const (
	// SrcLib: read from the library (Mutex.ValidUntil).
	SrcLib = "lib"
	// SrcPred: computed by the worker's recording backend from the send
	// and reply times of session opens and renewals, by the rule the
	// library documents (a hold's deadline is its session's: send time +
	// TTL − TTL/20 of the session's last open or renewal, counted only if
	// the reply came before the deadline in force). The send time is when
	// the engine read the server's time for the expiry it sent. It is
	// never earlier than the library's deadline, since the library reads
	// its clock first, and the stored expiry lets no one take over before
	// it plus TTL/20.
	SrcPred = "pred"
)

// Write outcomes.
const (
	OutOK      = "ok"      // the register accepted the write
	OutStale   = "stale"   // the register rejected the token
	OutUnknown = "unknown" // an error: the write may or may not have applied
)

// Event is one line of a history file. Times are CLOCK_MONOTONIC
// nanoseconds (see Now).
type Event struct {
	Ev      string `json:"ev"`
	Worker  string `json:"w,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Owner   string `json:"owner,omitempty"`
	Key     string `json:"key,omitempty"`
	Token   uint64 `json:"tok,omitempty"`
	T       int64  `json:"t"`
	DL      int64  `json:"dl,omitempty"`
	Src     string `json:"src,omitempty"`
	TTL     int64  `json:"ttl,omitempty"`
	Margin  int64  `json:"margin,omitempty"`
	Lost    bool   `json:"lost,omitempty"`
	Value   int64  `json:"val,omitempty"`
	WID     string `json:"wid,omitempty"`
	Outcome string `json:"out,omitempty"`
	Kind    string `json:"kind,omitempty"`
	End     int64  `json:"end,omitempty"`
	Err     string `json:"err,omitempty"`
	// EvAcquire only: how the hold shares its key (ModeShared,
	// ModeWeighted; empty: exclusive), and a weighted hold's weight and
	// the key's limit.
	Mode   string `json:"mode,omitempty"`
	Weight int64  `json:"weight,omitempty"`
	Limit  int64  `json:"limit,omitempty"`
	// EvProclaim, EvObserve and EvPoll: the value a leader advertised
	// (Info.Value) and its revision within the term (Info.Rev).
	Adv string `json:"adv,omitempty"`
	Rev uint64 `json:"rev,omitempty"`
	// EvAcquire of a term, and EvMember: the candidate's version
	// (leader.WithVersion) and priority (leader.WithPriority).
	Version  string `json:"ver,omitempty"`
	Priority int    `json:"prio,omitempty"`
	// EvCounts only.
	Hints *HintCounts `json:"hints,omitempty"`
	Runs  uint64      `json:"runs,omitempty"`
}

// HintCounts is a worker's hint.Stats, as EvCounts records it.
type HintCounts struct {
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"recv"`
	Rejected uint64 `json:"rejected"`
	Refused  uint64 `json:"refused"`
	Taken    uint64 `json:"taken"`
	Woke     uint64 `json:"woke"`
}

// Modes of holds (Event.Mode). The empty mode is exclusive.
const (
	ModeShared   = "shared"
	ModeWeighted = "weighted"
)

// Writer appends events to a history file, one JSON line per write(2) on
// an O_APPEND descriptor: a process killed at any moment leaves whole
// lines, except perhaps a truncated last one.
type Writer struct {
	mu sync.Mutex
	f  *os.File
}

// Create opens path for appending, creating it if needed.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends ev. Safe for concurrent use.
func (w *Writer) Write(ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.f.Write(b)
	return err
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// Read parses a history stream. A last line that is cut short (no newline,
// or not valid JSON without one) is dropped and reported as truncated; an
// invalid line anywhere else is an error.
func Read(r io.Reader) (events []Event, truncated bool, err error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, false, err
	}
	lines := bytes.Split(data, []byte{'\n'})
	for i, line := range lines {
		last := i == len(lines)-1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			if last {
				// No newline after it: the writer died mid-line.
				return events, true, nil
			}
			return nil, false, fmt.Errorf("line %d: %w", i+1, err)
		}
		if last {
			// Complete JSON but no newline: keep it, but say so.
			truncated = true
		}
		events = append(events, ev)
	}
	return events, truncated, nil
}

// ReadFile reads one history file.
func ReadFile(path string) ([]Event, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	evs, tr, err := Read(f)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return evs, tr, nil
}

// ReadDir reads and merges every *.jsonl file in dir, ordered by T (stable
// within a file). It returns the number of files whose last line was
// truncated.
func ReadDir(dir string) (events []Event, truncated int, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, 0, err
	}
	sort.Strings(paths)
	var errs []error
	for _, p := range paths {
		evs, tr, err := ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if tr {
			truncated++
		}
		events = append(events, evs...)
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	return events, truncated, errors.Join(errs...)
}

// FileName is the history file name of a worker process.
func FileName(worker string, pid int) string {
	return fmt.Sprintf("%s-%d.jsonl", strings.ReplaceAll(worker, "/", "_"), pid)
}
