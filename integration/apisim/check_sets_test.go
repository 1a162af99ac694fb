package apisim

import (
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// life is a claim of Set set at key of epoch, in the store from landed
// to ended (ms; 0: never ended).
func life(set, key string, epoch uint64, landed, ended int) *ClaimLife {
	c := &ClaimLife{Key: key, Epoch: epoch, Waiter: set, Landed: at(landed)}
	if ended > 0 {
		c.Ended = at(ended)
	}
	return c
}

// edge is a wait of a deadlock: set waits with its claim of key at epoch
// for the claim of token of heldBy.
func edge(set, key string, epoch uint64, heldBy string, token uint64) driver.DeadlockEdge {
	return driver.DeadlockEdge{Set: set, Key: key, Epoch: epoch, HeldBy: heldBy, Token: token}
}

// cycleOfTwo is A holding a@1 and B b@1 from 0 on, A waiting at b (b@2)
// from 100 to 500, B at a (a@2) from 200 to 600; A's notes say it holds
// since 0, B's since 50: B is the younger.
func cycleOfTwo() History {
	return History{
		Lives: []*ClaimLife{life("A", "a", 1, 0, 0), life("B", "b", 1, 0, 0), life("A", "b", 2, 100, 500), life("B", "a", 2, 200, 600)},
		Notes: []NoteRec{{Note: driver.Wait{Set: "A", Since: at(0)}}, {Note: driver.Wait{Set: "B", Since: at(50)}}},
	}
}

func TestCheckSetsBreaks(t *testing.T) {
	with := func(h History, victim string, by int, edges ...driver.DeadlockEdge) History {
		h.Breaks = []BreakRec{{At: at(by), Record: driver.Deadlock{Victim: victim, Cycle: edges}}}
		return h
	}
	bWaits, aWaits := edge("B", "a", 2, "A", 1), edge("A", "b", 2, "B", 1)
	apart := cycleOfTwo()
	apart.Lives[2].Ended = at(150) // A gave up its wait before B began to wait
	runCases(t, CheckSets, []checkCase{
		{"the youngest breaks a cycle", with(cycleOfTwo(), "B", 400, bWaits, aWaits), 0},
		{"the oldest breaks it", with(cycleOfTwo(), "A", 400, aWaits, bWaits), 1},
		{"a chain", with(cycleOfTwo(), "A", 400, aWaits), 1},
		{"a cycle that never was whole", with(apart, "B", 400, bWaits, aWaits), 1},
		{"broken before it closed", with(cycleOfTwo(), "B", 150, bWaits, aWaits), 1},
		{"the holder's token wrong", with(cycleOfTwo(), "B", 400, edge("B", "a", 2, "A", 7), aWaits), 1},
	})
}

func TestCheckSetsAllOrNothing(t *testing.T) {
	run := func(calls ...*SetCall) History { return History{SetRuns: []*SetRun{{ID: "S", Calls: calls}}} }
	call := func(op string, keys []string, err error, tokens, held, kept []uint64) *SetCall {
		return &SetCall{Op: op, Keys: keys, Err: err, Tokens: tokens, Held: held, Kept: kept}
	}
	ab, c := []string{"a", "b"}, []string{"c"}
	failed, deadlock := errors.New("context deadline exceeded"), &lockset.DeadlockError{}
	// In a calm run, a Lock of a and b that failed at 1000, whose claim
	// of a ends at end (or is lost at 1000, if lost).
	inStore := func(end int, lost bool) History {
		h := run(&SetCall{Op: "lock", Keys: ab, Err: failed, Held: []uint64{0, 0}, Call: at(0), Return: at(1000)})
		h.Calm, h.TTLs = true, []time.Duration{time.Second}
		h.Lives = []*ClaimLife{life("S", "a", 1, 100, end), life("S", "b", 2, 200, 900)}
		if lost {
			h.Lives[0].Lost = at(1000)
		}
		return h
	}
	runCases(t, CheckSets, []checkCase{
		{"Lock holds all", run(call("lock", ab, nil, []uint64{4, 5}, []uint64{4, 5}, nil)), 0},
		{"Lock returns with a member unheld", run(call("lock", ab, nil, []uint64{4, 0}, []uint64{4, 0}, nil)), 1},
		{"Lock fails, holding none", run(call("lock", ab, failed, nil, []uint64{0, 0}, nil)), 0},
		{"Lock fails, a member still held", run(call("lock", ab, failed, nil, []uint64{4, 0}, nil)), 1},
		{"LockMore adds", run(call("lock", ab, nil, []uint64{4, 5}, []uint64{4, 5}, nil),
			call("more", c, nil, []uint64{4, 5, 6}, []uint64{6}, []uint64{4, 5})), 0},
		{"LockMore fails, the others kept", run(call("lock", ab, nil, []uint64{4, 5}, []uint64{4, 5}, nil),
			call("more", c, failed, []uint64{4, 5}, []uint64{0}, []uint64{4, 5})), 0},
		{"LockMore fails, the others gone", run(call("lock", ab, nil, []uint64{4, 5}, []uint64{4, 5}, nil),
			call("more", c, failed, nil, []uint64{0}, []uint64{0, 0})), 1},
		{"a deadlock leaves nothing", run(call("lock", ab, nil, []uint64{4, 5}, []uint64{4, 5}, nil),
			&SetCall{Op: "more", Keys: c, Err: deadlock, Deadlock: deadlock, Held: []uint64{0}, Kept: []uint64{0, 0}, SetErr: deadlock}), 0},
		{"a deadlock leaves a member held", run(call("lock", ab, nil, []uint64{4, 5}, []uint64{4, 5}, nil),
			&SetCall{Op: "more", Keys: c, Err: deadlock, Deadlock: deadlock, Held: []uint64{0}, Kept: []uint64{4, 0}, SetErr: deadlock}), 1},
		{"a failed Lock's claims ended by its return", inStore(1000, false), 0},
		{"a failed Lock's claim left in the store", inStore(3000, false), 1},
		{"a failed Lock's lost claim left to run out", inStore(3000, true), 0},
	})
}

func TestCheckSetCycles(t *testing.T) {
	// Sets A and B of processes 0 and 1 (TTL 1 s), in calls op from 0
	// to 5000, detecting deadlocks after d ms (0: off), in the cycle of
	// cycleOfTwo, which lasts from 200 to 500.
	sets := func(opA, opB string, d int, calm bool) History {
		h := cycleOfTwo()
		h.Calm, h.TTLs = calm, []time.Duration{time.Second, time.Second}
		for i, id := range []string{"A", "B"} {
			op := []string{opA, opB}[i]
			h.SetRuns = append(h.SetRuns, &SetRun{ID: id, Proc: i, D: time.Duration(d) * time.Millisecond,
				Calls: []*SetCall{{Op: op, Call: at(0), Return: at(5000)}}})
		}
		return h
	}
	// long has the cycle last until to.
	long := func(h History, to int) History {
		h.Lives[2].Ended, h.Lives[3].Ended = at(to), at(to+100)
		return h
	}
	lost := long(sets("lock", "lock", 100, true), 4000)
	lost.Lives[0].Lost = at(300) // A's hold of a: lost, left to run out
	faulted := long(sets("more", "more", 100, true), 4000)
	faulted.ProcFaults = []ProcFault{{Proc: 1, Kind: "pause", From: at(-1500), To: at(-1000)}}
	runCases(t, CheckSetCycles, []checkCase{
		{"a cycle of Locks", sets("lock", "lock", 100, true), 1},
		{"Locks, within the slack", long(sets("lock", "try", 100, true), 300), 0},
		{"LockMores broken in time", long(sets("more", "lock", 100, true), 400), 0},
		{"LockMores broken late", long(sets("more", "more", 100, true), 4000), 1},
		{"a Set without detection", long(sets("more", "more", 0, true), 4000), 0},
		{"not calm", long(sets("lock", "lock", 100, false), 4000), 0},
		{"a fault of a process before", faulted, 0},
		{"a lost hold is nobody's", lost, 0},
	})
}
