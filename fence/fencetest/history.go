package fencetest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// A key's history: every call of Write and Read in a trial, with when it
// was called and when it returned, for the linearizability check.

type opKind int

const (
	opWrite opKind = iota
	opRead
)

type opInput struct {
	kind  opKind
	token uint64 // writes
	value int64  // writes
}

type outcome int

const (
	outApplied outcome = iota // Write returned nil
	outStale                  // Write returned an error matching fence.ErrStale
	outUnknown                // Write returned another error: it may still apply
	outRead                   // Read returned value
)

type opOutput struct {
	outcome outcome
	value   int64 // reads
}

// history records one trial's calls. A call whose outcome is unknown
// returns, for the check, at the end of time: a statement whose reply
// was lost may still be applied after its caller gave up on it.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return time.Since(h.start).Nanoseconds() }

func (h *history) add(call int64, in opInput, out opOutput) {
	ret := h.now()
	if out.outcome == outUnknown {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{Input: in, Call: call, Output: out, Return: ret})
}

// markState is a key's state in the contract's sequential model: its mark
// (the highest token accepted, 0 for none) and its register.
type markState struct {
	mark  uint64
	value int64
}

// contract is the sequential model of package fence's contract, as the
// package doc states it. It is nondeterministic only where the outcome
// is: a write whose reply was lost applied, or raised the mark alone (a
// fence that admitted it before the write was abandoned), or did
// nothing.
var contract = porcupine.NondeterministicModel{
	Init: func() []any { return []any{markState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(markState), input.(opInput), output.(opOutput)
		if in.kind == opRead {
			if s.value == out.value {
				return []any{s}
			}
			return nil
		}
		admitted := in.token >= s.mark
		switch out.outcome {
		case outApplied:
			if admitted {
				return []any{markState{mark: in.token, value: in.value}}
			}
		case outStale:
			if !admitted {
				return []any{s}
			}
		case outUnknown:
			if admitted {
				return []any{s, markState{mark: in.token, value: s.value}, markState{mark: in.token, value: in.value}}
			}
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(opInput), output.(opOutput)
		if in.kind == opRead {
			return fmt.Sprintf("read -> %d", out.value)
		}
		return fmt.Sprintf("write(token %d, %d) -> %s", in.token, in.value, [...]string{"applied", "stale", "unknown"}[out.outcome])
	},
	DescribeState: func(state any) string {
		s := state.(markState)
		return fmt.Sprintf("mark %d, value %d", s.mark, s.value)
	},
}

// linearizable checks h against the contract.
func (h *history) linearizable(timeout time.Duration) porcupine.CheckResult {
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	return porcupine.CheckOperationsTimeout(contract.ToModel(), ops, timeout)
}

// describe lists the history's operations by call time, for a report.
func (h *history) describe() string {
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var b strings.Builder
	for i, op := range ops {
		if i > 0 {
			b.WriteString("; ")
		}
		ret := "never"
		if op.Return != math.MaxInt64 {
			ret = fmt.Sprintf("%dµs", op.Return/1000)
		}
		fmt.Fprintf(&b, "[%dµs, %s] %s", op.Call/1000, ret, contract.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}
