//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// record updates the demo's view with ev.
func (d *demo) record(ev procLine) error {
	switch ev.fields[0] {
	case "ready":
		ev.p.ready = true
	case "elected":
		d.recordElected(ev)
	case "resigned":
		d.leaderGone(ev.p)
	case "hold":
		return d.recordHold(ev)
	case "done", "lostlock":
		d.recordHoldEnd(ev)
	case "lost":
		d.leaderGone(ev.p)
		d.row(ev.at, "lost", ev.p.label, "", "leadership: no renewal confirmed in time")
	case "exit":
		return d.recordExit(ev)
	}
	return nil
}

// num is the number in field i of ev, 0 if there is none.
func (ev procLine) num(i int) uint64 {
	if i >= len(ev.fields) {
		return 0
	}
	n, _ := strconv.ParseUint(ev.fields[i], 10, 64)
	return n
}

// stamp is the time in field i of ev, in nanoseconds since the epoch.
func (ev procLine) stamp(i int) time.Time { return time.Unix(0, int64(ev.num(i))) }

// leaderGone notes that p leads no more, if it led.
func (d *demo) leaderGone(p *proc) {
	if d.leader == p {
		d.leader = nil
	}
}

// recordElected: "elected TOKEN".
func (d *demo) recordElected(ev procLine) {
	t := leaderTerm{p: ev.p, token: ev.num(1), at: ev.at}
	d.leaders = append(d.leaders, t)
	d.leader = ev.p
	if !d.live {
		return
	}
	note := ""
	if d.nextNote != nil {
		note, d.nextNote = d.nextNote(t), nil
	}
	d.rowElected(t, note)
}

// recordHold: "hold TOKEN UNIXNANO". A token held twice is an error.
func (d *demo) recordHold(ev procLine) error {
	h := &lockHold{p: ev.p, token: ev.num(1), start: ev.stamp(2)}
	if _, dup := d.holds[h.token]; dup {
		return fmt.Errorf("two holds of %s with token %d", demoLock, h.token)
	}
	d.holds[h.token] = h
	d.phaseTokens = append(d.phaseTokens, h.token)
	return nil
}

// recordHoldEnd: "done TOKEN UNIXNANO" or "lostlock TOKEN UNIXNANO".
func (d *demo) recordHoldEnd(ev procLine) {
	if h := d.holds[ev.num(1)]; h != nil && h.p == ev.p {
		h.end = ev.stamp(2)
	}
	if ev.fields[0] == "lostlock" {
		// Possible on an overloaded machine; the check of the holds
		// still applies.
		d.row(ev.at, "lock lost", ev.p.label, ev.fields[1], "no renewal confirmed in time: it stopped")
	}
}

// recordExit: the process exited ("exit STATUS"), which ends its holds.
// Only a killed one may exit with a status other than 0.
func (d *demo) recordExit(ev procLine) error {
	ev.p.exited = true
	d.leaderGone(ev.p)
	ev.p.status, _ = strconv.Atoi(ev.fields[1])
	for _, h := range d.holds {
		if h.p == ev.p && h.end.IsZero() {
			h.end, h.cut = ev.at, true
		}
	}
	if ev.p.killed.IsZero() && ev.p.status != 0 {
		return fmt.Errorf("candidate %s exited with status %d", ev.p.label, ev.p.status)
	}
	return nil
}

// await records events until done reports true, for at most timeout.
func (d *demo) await(ctx context.Context, timeout time.Duration, what string, done func() bool) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for !done() {
		select {
		case ev := <-d.events:
			if err := d.record(ev); err != nil {
				return err
			}
		case <-t.C:
			return fmt.Errorf("%w after %v waiting for %s", errTimedOut, timeout, what)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// awaitLeader waits until some candidate other than not leads, elected
// after the first n terms, and returns it.
func (d *demo) awaitLeader(ctx context.Context, n int, not *proc) (*proc, error) {
	err := d.await(ctx, 10*time.Second+3*d.ttl, "a leader", func() bool {
		return d.leader != nil && d.leader != not && len(d.leaders) > n
	})
	return d.leader, err
}

// steady records events for a while.
func (d *demo) steady(ctx context.Context, dur time.Duration) error {
	err := d.await(ctx, dur, "", func() bool { return false })
	if errors.Is(err, errTimedOut) {
		return nil
	}
	return err
}

var errTimedOut = errors.New("timed out")
