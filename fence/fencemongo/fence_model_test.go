package fencemongo

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The sequential specification of a Fenced collection, as its docs
// (fence.go, fence_absent.go) state it, for the porcupine check of
// fence_sim_test.go. Each _id is a register of its own (porcupine checks
// each _id's operations apart): the highest token that has touched it
// (its fence; 0 if none has), whether its document exists, and its value.

// fenceState is one _id's register.
type fenceState struct {
	fence  int64
	exists bool
	value  int
}

// fenceOpKind is a Fenced operation of the simulation, every one by _id.
type fenceOpKind int

const (
	simFind    fenceOpKind = iota // FindOne
	simUpdate                     // UpdateOne {$set: {v: value}}, on expect's value only if cas
	simReplace                    // ReplaceOne with {v: value}
	simInsert                     // InsertOne {_id, v: value}
	simDelete                     // DeleteOne
	simRaise                      // no call: the fence raise an operation by _id may make on its way (see fenceStep)
	simKinds
)

func (k fenceOpKind) String() string {
	return [...]string{"FindOne", "UpdateOne", "ReplaceOne", "InsertOne", "DeleteOne", "raise"}[k]
}

// fenceInput is an operation as called.
type fenceInput struct {
	kind   fenceOpKind
	id     string
	token  int64
	value  int  // what an update, a replacement or an insert writes
	cas    bool // an update whose filter also asks {v: expect}
	expect int
}

// fenceOutcome is what an operation returned.
type fenceOutcome int

const (
	outOK      fenceOutcome = iota // nil error
	outFenced                      // ErrFenced
	outNoDoc                       // mongo.ErrNoDocuments (FindOne)
	outDup                         // the server's duplicate key error (InsertOne)
	outUnknown                     // the context's error: the reply was lost
	outcomes
)

func (o fenceOutcome) String() string {
	return [...]string{"ok", "ErrFenced", "ErrNoDocuments", "duplicate key", "unknown"}[o]
}

// fenceOutput is what an operation returned: its outcome, the value a
// FindOne found, the count of documents an update, a replacement or a
// delete matched.
type fenceOutput struct {
	outcome fenceOutcome
	value   int
	n       int64
}

// fenceApply is what the docs promise of in on s: the state after it and
// its output.
//
//   - An operation whose token is below the _id's fence changes nothing
//     and fails with ErrFenced (InsertOne included: it "fails with
//     ErrFenced once a holder with a later token has read the _id ...,
//     written or deleted its document").
//   - Otherwise FindOne, UpdateOne, ReplaceOne and DeleteOne raise the
//     fence to the token, whether they match or not: their filters name
//     one _id, and "a FindOne, UpdateOne, ReplaceOne or DeleteOne whose
//     filter names one _id and matches nothing raises the fence of that
//     _id before it answers". FindOne returns the document or
//     ErrNoDocuments; UpdateOne and ReplaceOne apply if the document
//     exists (and, for a CAS, has the expected value) and say how many
//     matched; DeleteOne leaves the _id absent, its fence kept.
//   - InsertOne applies where no document has the _id, and fails with the
//     duplicate key error, changing nothing, where one has.
func fenceApply(s fenceState, in fenceInput) (fenceState, fenceOutput) {
	if s.fence > in.token {
		return s, fenceOutput{outcome: outFenced}
	}
	if in.kind == simInsert {
		if s.exists {
			return s, fenceOutput{outcome: outDup}
		}
		return fenceState{fence: in.token, exists: true, value: in.value}, fenceOutput{}
	}
	next := s
	next.fence = in.token
	switch in.kind {
	case simFind:
		if !s.exists {
			return next, fenceOutput{outcome: outNoDoc}
		}
		return next, fenceOutput{value: s.value}
	case simUpdate, simReplace:
		if !s.exists || (in.cas && s.value != in.expect) {
			return next, fenceOutput{}
		}
		next.value = in.value
		return next, fenceOutput{n: 1}
	case simDelete:
		next.exists, next.value = false, 0
		if !s.exists {
			return next, fenceOutput{}
		}
		return next, fenceOutput{n: 1}
	case simRaise:
		return next, fenceOutput{}
	}
	panic(fmt.Sprintf("fence model: operation %v", in.kind))
}

// fenceStep is the step of the nondeterministic model: the states in may
// leave s in, given what it returned.
//
// An operation whose reply was lost (its context cancelled in flight)
// may have happened or not. The simulation cancels a request only before
// it is sent or after its reply came, so none of it is in flight once
// the call returns: its effect, if any, lies within its call and return,
// which the history keeps.
//
// A simRaise is the fence raise that a FindOne, UpdateOne, ReplaceOne or
// DeleteOne by _id makes when its first try matches nothing (fence.go's
// fenced): a step of its own, since it can come before the step that
// decides what the operation returns, when another holder's operations
// come between the two. The history holds one beside each such
// operation, over the same interval, and it may have happened or not. It
// only raises a fence to a token that a caller holds, which the docs
// allow at any time (a FindOne does nothing else); it is why an
// operation that fails with ErrFenced may still have raised the fence.
func fenceStep(state, input, output any) []any {
	s, in, out := state.(fenceState), input.(fenceInput), output.(fenceOutput)
	next, want := fenceApply(s, in)
	if in.kind == simRaise || out.outcome == outUnknown {
		return []any{s, next}
	}
	if out != want {
		return nil
	}
	return []any{next}
}

// fenceModel is the porcupine model: one register per _id.
var fenceModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byID := map[string][]porcupine.Operation{}
		var ids []string
		for _, op := range history {
			id := op.Input.(fenceInput).id
			if _, ok := byID[id]; !ok {
				ids = append(ids, id)
			}
			byID[id] = append(byID[id], op)
		}
		parts := make([][]porcupine.Operation, len(ids))
		for i, id := range ids {
			parts[i] = byID[id]
		}
		return parts
	},
	Init: func() []any { return []any{fenceState{}} },
	Step: fenceStep,
	DescribeOperation: func(input, output any) string {
		in, out := input.(fenceInput), output.(fenceOutput)
		call := fmt.Sprintf("%v(%s) token %d", in.kind, in.id, in.token)
		switch {
		case in.kind == simRaise:
			return call
		case in.cas:
			call += fmt.Sprintf(" v %d→%d", in.expect, in.value)
		case in.kind == simUpdate || in.kind == simReplace || in.kind == simInsert:
			call += fmt.Sprintf(" v=%d", in.value)
		}
		switch {
		case out.outcome != outOK:
			return call + " → " + out.outcome.String()
		case in.kind == simFind:
			return fmt.Sprintf("%s → v %d", call, out.value)
		case in.kind == simInsert:
			return call + " → ok"
		}
		return fmt.Sprintf("%s → %d matched", call, out.n)
	},
	DescribeState: func(state any) string {
		s := state.(fenceState)
		if !s.exists {
			return fmt.Sprintf("absent, fence %d", s.fence)
		}
		return fmt.Sprintf("v %d, fence %d", s.value, s.fence)
	},
}).ToModel()
