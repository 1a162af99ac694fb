package leader_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/leader"
)

// The observer is told when the candidate starts and stops leading, with
// the term and the cause, in order: what a leader gauge needs.
func TestObserverTransitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newProc(t)
		var got []leader.Transition
		e, err := leader.NewElection(b.c, "jobs", leader.WithObserver(func(tr leader.Transition) { got = append(got, tr) }))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := e.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil { // delivers what is queued
			t.Fatal(err)
		}
		if len(got) != 4 {
			t.Fatalf("observed %+v, want 4 transitions", got)
		}
		for i, tr := range got {
			if tr.Election != "jobs" || tr.Leading != (i%2 == 0) || tr.Term == 0 {
				t.Errorf("transition %d: %+v", i, tr)
			}
			if !tr.Leading && !errors.Is(tr.Cause, leader.ErrResigned) {
				t.Errorf("transition %d ended with %v, want ErrResigned", i, tr.Cause)
			}
		}
		if got[0].Term != got[1].Term || got[2].Term <= got[1].Term {
			t.Errorf("terms %d, %d, %d, %d: a term's end names it, and the next is higher", got[0].Term, got[1].Term, got[2].Term, got[3].Term)
		}
	})
}

func TestWithObserverNil(t *testing.T) {
	b := newProc(t)
	if _, err := leader.NewElection(b.c, "jobs", leader.WithObserver(nil)); err == nil {
		t.Error("NewElection accepted a nil observer")
	}
}

// An election's lease is told to a dsync observer as event.KindElection,
// not as a Mutex of the election's name: dsync recognizes the lease by
// this package's Namespace.
func TestLeaseObservedAsElection(t *testing.T) {
	var mu sync.Mutex
	var kinds []event.Kind
	add := func(k event.Kind) { mu.Lock(); kinds = append(kinds, k); mu.Unlock() }
	p := newProc(t, dsync.ClientWithObserver(event.Observer{
		Acquired: func(a event.Acquisition) { add(a.Kind) },
		Released: func(h event.Held) { add(h.Kind) },
	}))
	e, err := leader.NewElection(p.c, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	p.c.Close() // delivers what is queued
	mu.Lock()
	defer mu.Unlock()
	if len(kinds) != 2 || kinds[0] != event.KindElection || kinds[1] != event.KindElection {
		t.Errorf("the lease's acquisition and release observed as %v, want [%s %s]", kinds, event.KindElection, event.KindElection)
	}
}
