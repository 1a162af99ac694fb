package apisim

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// TestCheckOutage judges CheckOutage's promises on small histories: TTL
// 600 ms for both processes, a grace of 3 s, process 0's hold of "k"
// lost at its deadline 1000 ms.
func TestCheckOutage(t *testing.T) {
	const ttl = 600 * time.Millisecond
	hold := func(id, proc, tok, start, end int, lost bool) *Hold {
		h := &Hold{ID: id, Proc: proc, Who: fmt.Sprintf("p%d", proc), Prim: PrimMutex, Key: "k", Token: uint64(tok), Start: at(start), Deadline: at(end)}
		if lost {
			h.LostAt = at(end)
		}
		return h
	}
	// stamps every 100 ms in [from, to), of process 1's session.
	stamps := func(from, to int) []Stamp {
		var ss []Stamp
		for ms := from; ms < to; ms += 100 {
			ss = append(ss, Stamp{At: at(ms), Session: "s1", Proc: 1})
		}
		return ss
	}
	outage := func(from, to int) ProcFault {
		return ProcFault{Proc: -1, Kind: "store outage", From: at(from), To: at(to)}
	}
	cut := func(from, to int) ProcFault {
		return ProcFault{Proc: 0, Kind: "unreachable", From: at(from), To: at(to)}
	}
	ended := fmt.Errorf("lock %q: the hold lost in the store outage ended during it: %w", "k", dsync.ErrLost)
	lost := hold(1, 0, 5, 0, 1000, true)
	for _, c := range []struct {
		name   string
		holds  []*Hold
		relock *Relock
		stamps []Stamp
		faults []ProcFault
		waits  []*Wait
		want   string // the promise broken; "" for none
	}{
		{"taken back, same token", []*Hold{lost, {ID: 2, Proc: 0, Who: "p0", Prim: PrimMutex, Key: "k", Token: 5, Start: at(2300), Deadline: at(4000), Resumes: lost}},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300)}, stamps(0, 900), []ProcFault{outage(900, 2200)}, nil, ""},
		{"taken back, another token", []*Hold{lost, hold(2, 0, 7, 2300, 4000, false)},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300)}, stamps(0, 900), []ProcFault{outage(900, 2200)}, nil, PromiseResume},
		{"taken back, another held between", []*Hold{lost, hold(3, 1, 6, 2250, 2280, false), {ID: 2, Proc: 0, Who: "p0", Prim: PrimMutex, Key: "k", Token: 5, Start: at(2300), Deadline: at(4000), Resumes: lost}},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300)}, stamps(0, 900), []ProcFault{outage(900, 2200)}, nil, PromiseResume},
		{"ended, the outage shorter than the grace", []*Hold{lost},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300), Err: ended}, stamps(0, 900), []ProcFault{outage(900, 2200)}, nil, PromiseRelock},
		{"ended, the store back and up a TTL without a resume", []*Hold{lost},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(3000), Err: ended}, append(stamps(0, 900), stamps(2200, 3000)...), []ProcFault{outage(900, 2200)}, nil, PromiseRelock},
		{"ended, cut off alone", []*Hold{lost},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300), Err: ended}, stamps(0, 2300), []ProcFault{cut(900, 2200)}, nil, ""},
		{"ended, the outage longer than the grace", []*Hold{lost},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(4700), Err: ended}, stamps(0, 900), []ProcFault{outage(900, 4800)}, nil, ""},
		{"ended, an error without the sentinel", []*Hold{lost},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300), Err: errors.New("no")}, stamps(0, 2300), []ProcFault{cut(900, 2200)}, nil, PromiseRelock},
		{"its context ended, the hold kept", []*Hold{lost},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300), Err: context.DeadlineExceeded, CtxEnded: true}, stamps(0, 2300), []ProcFault{outage(900, 2200)}, nil, ""},
		{"its context ended, the Mutex left unlocked", []*Hold{lost},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300), Err: context.DeadlineExceeded, CtxEnded: true, Unlocked: true}, stamps(0, 2300), []ProcFault{outage(900, 2200)}, nil, PromiseRelock},
		{"taken over in the outage's credit", []*Hold{lost, hold(3, 1, 6, 2250, 2280, false)},
			&Relock{Proc: 0, Prim: PrimMutex, Key: "k", Lost: lost, Call: at(1000), Return: at(2300), Err: ended}, stamps(0, 900), []ProcFault{outage(900, 2200)}, nil, PromiseRelock},
		{"a cut-off holder replaced in time", []*Hold{lost, hold(3, 1, 6, 1500, 1800, false)}, nil, stamps(0, 2300), []ProcFault{cut(700, 2200)},
			[]*Wait{{Proc: 1, Key: "k", Call: at(500), Return: at(1500), OK: true}}, ""},
		{"a cut-off holder replaced late", []*Hold{lost, hold(3, 1, 6, 2500, 2800, false)}, nil, stamps(0, 2300), []ProcFault{cut(700, 2200)},
			[]*Wait{{Proc: 1, Key: "k", Call: at(500), Return: at(2500), OK: true}}, PromiseFailover},
		{"a cut-off holder followed in time by its own process's waiter, queued first", []*Hold{lost, hold(3, 0, 6, 1500, 1800, false)}, nil, stamps(0, 2300), []ProcFault{cut(700, 1200)},
			[]*Wait{{Proc: 1, Key: "k", Call: at(500), Return: at(2500), OK: true}}, ""},
		{"a cut-off holder replaced late, the key waiting for stalled gates", []*Hold{lost, hold(3, 1, 6, 2500, 2800, false)}, nil, stamps(0, 2300),
			[]ProcFault{cut(700, 2200), stalledGatesFault("k", " landed", at(-3000), at(-2990), 2*time.Second)},
			[]*Wait{{Proc: 1, Key: "k", Call: at(500), Return: at(2500), OK: true}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{Holds: c.holds, Stamps: c.stamps, ProcFaults: c.faults, Waits: c.waits, Calm: true,
				OutageGrace: 3 * time.Second, TTLs: []time.Duration{ttl, ttl}}
			if c.relock != nil {
				if c.relock.Err == nil {
					c.relock.Held = c.holds[len(c.holds)-1]
				}
				h.Relocks = []*Relock{c.relock}
			}
			vs := CheckOutage(h)
			switch {
			case c.want == "" && len(vs) > 0:
				t.Errorf("got %v; want none", vs)
			case c.want != "" && (len(vs) == 0 || vs[0].Promise != c.want):
				t.Errorf("got %v; want a violation of %q", vs, c.want)
			}
		})
	}
}

// TestExpiryAtResumes: with a grace, a session's confirmations form
// periods, a confirmation at or past the deadline so far beginning the
// next; a hold's deadline is that of the period it began in. Without a
// grace, every hold has the first period's.
func TestExpiryAtResumes(t *testing.T) {
	ttl := 600 * time.Millisecond
	m := ttl - ttl/20
	l := &leaseLog{ttl: ttl, resumes: true, updates: []leaseUpdate{
		{at: at(10), deadline: at(0).Add(m)}, {at: at(210), deadline: at(200).Add(m)}, // deadline 770
		{at: at(2000), deadline: at(1990).Add(m)}, {at: at(2200), deadline: at(2190).Add(m)}, // resumed: 2760
	}}
	for _, c := range []struct {
		start int
		want  time.Time
	}{{100, at(200).Add(m)}, {700, at(200).Add(m)}, {2100, at(2190).Add(m)}} {
		if got := l.expiryAt(at(c.start)); !got.Equal(c.want) {
			t.Errorf("a hold from %d ms: deadline %v; want %v", c.start, got.Format(tf), c.want.Format(tf))
		}
	}
	l.resumes = false
	if got, want := l.expiryAt(at(2100)), at(200).Add(m); !got.Equal(want) {
		t.Errorf("without a grace: deadline %v; want %v", got.Format(tf), want.Format(tf))
	}
}
