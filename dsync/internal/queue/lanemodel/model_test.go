package lanemodel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// stateLimit bounds an exploration: one that passes it fails, so that a
// change that makes the model's state space grow says so.
const stateLimit = 30_000_000

// Every interleaving of a few readers and writers, their requests landing
// in any order (after their senders' later requests too), one document of
// an ordered insert at a time, writers giving up wherever they wait, and
// one process crashing anywhere (its claims then marked dead by those
// that wait for them), lanes below a writer that held pruned: no writer holds beside any other hold, a writer's
// token is above every hold's before it, a reader's above every writer's
// before it, and nobody waits for ever.
func TestLanesHoldTheirPromises(t *testing.T) {
	cases := []struct {
		name string
		c    config
		long bool // too many states for the short form
	}{
		{"a reader of two holds, a writer, a crash", config{readers: []int{2}, writers: 1, v: variant{crashes: 1}}, false},
		{"two readers of one hold, a writer, a crash", config{readers: []int{1, 1}, writers: 1, v: variant{crashes: 1}}, false},
		{"a reader of two holds, two writers", config{readers: []int{2}, writers: 2}, false},
		{"a reader of three holds, a writer, prunes", config{readers: []int{3}, writers: 1, v: variant{prunes: true}}, false},
		{"a reader of two holds, a writer, an emptying", config{readers: []int{2}, writers: 1, v: variant{empties: true}}, false},
		{"a reader of three holds, two writers, an emptying", config{readers: []int{3}, writers: 2, v: variant{empties: true}}, true},
		{"a reader of two holds, a writer, a TryLock", config{readers: []int{2}, writers: 1, tries: 1}, false},
		{"a reader of three holds, a writer, a lost reply", config{readers: []int{3}, writers: 1, v: variant{lostReplies: 1}}, false},
		{"a reader of four holds, a writer sealing ahead, a lost reply", config{readers: []int{4}, writers: 1, v: variant{sealAhead: 2, lostReplies: 1}}, true},
		{"two readers of one hold and two, a writer, a lost reply", config{readers: []int{2, 1}, writers: 1, v: variant{lostReplies: 1}}, true},
		{"a reader of two holds, two writers, a lost reply", config{readers: []int{2}, writers: 2, v: variant{lostReplies: 1}}, true},
		{"a reader of four holds, a writer sealing ahead", config{readers: []int{4}, writers: 1, v: variant{sealAhead: 2}}, false},
		{"a reader of three holds, two writers sealing ahead", config{readers: []int{3}, writers: 2, v: variant{sealAhead: 1}}, true},
		{"two readers of one hold, a TryLock, a crash", config{readers: []int{1, 1}, tries: 1, v: variant{crashes: 1}}, false},
		{"a reader of two holds, two writers, prunes", config{readers: []int{2}, writers: 2, v: variant{prunes: true}}, true},
		{"two readers of two holds, a writer", config{readers: []int{2, 2}, writers: 1}, false},
		{"a reader of two holds, two writers, a crash", config{readers: []int{2}, writers: 2, v: variant{crashes: 1}}, true},
		{"two readers of two holds, a writer, a crash", config{readers: []int{2, 2}, writers: 1, v: variant{crashes: 1}}, true},
		{"three readers of one hold, a writer", config{readers: []int{1, 1, 1}, writers: 1}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.long {
				longtest.Skip(t)
				if raceEnabled {
					t.Skip("a larger configuration: without the race detector only (race_test.go)")
				}
			}
			t.Parallel()
			o := explore(tc.c, stateLimit)
			t.Logf("%d states", o.states)
			if o.bug != "" {
				t.Fatalf("%s\n%s", o.bug, strings.Join(o.trace, "\n"))
			}
		})
	}
}

// Each rule of the proposal, broken alone, lets the explorer find a
// violation: the model can tell the protocol from its near misses.
func TestLaneRulesEachMatter(t *testing.T) {
	cases := map[string]variant{
		"a writer that does not seal":                        {noSeal: true},
		"a writer that does not wait for the last hold":      {writerSkipsLastHold: true},
		"a writer that seals the next slot unread":           {sealBlindly: true},
		"a reader that holds on a sealed slot":               {readerIgnoresSeal: true},
		"a reader whose first hold skips its walk":           {readerSkipsWalk: true},
		"a reader that holds without its chain":              {readerSkipsChain: true, prunes: true},
		"a reader that holds without its chain, emptied":     {readerSkipsChain: true, empties: true},
		"a prune that deletes a seal before its shadows":     {pruneSealFirst: true, prunes: true},
		"a first hold that does not check the floor":         {readerSkipsFloor: true, prunes: true},
		"a writer sealing ahead that reads no refused slot":  {sealAhead: 1, sealAheadSkipsRefused: true},
		"a reader that holds on a slot's lost reply":         {lostReplies: 1, holdOnLostReply: true},
		"a writer that takes a seal's lost reply for sealed": {lostReplies: 1, sealedOnLostReply: true},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			for _, c := range []config{
				{readers: []int{2}, writers: 1},
				{readers: []int{1, 1}, writers: 1},
				{readers: []int{2}, writers: 2},
				{readers: []int{3}, writers: 1},
			} {
				c.v = v
				o := explore(c, stateLimit)
				if o.bug != "" {
					t.Logf("found in %d states (%v): %s", o.states, c.readers, o.bug)
					return
				}
			}
			t.Fatal("no violation found")
		})
	}
}

// The explorer remembers states by key: a field that key leaves out merges
// states that differ and hides what follows from one of them (a writer's
// refused seal did, until its flag was in the key). A new field of these
// types must go into key, and its count here.
func TestKeyHasEveryField(t *testing.T) {
	for _, c := range []struct {
		v      any
		fields int
	}{{actor{}, 14}, {doc{}, 5}, {id{}, 3}, {put{}, 2}, {msg{}, 5}} {
		if n := reflect.TypeOf(c.v).NumField(); n != c.fields {
			t.Errorf("%T has %d fields, key encodes %d: encode the new ones in world.key or store.key", c.v, n, c.fields)
		}
	}
}
