//go:build unix

package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// row prints one line of the event table.
func (d *demo) row(at time.Time, what, who, token, note string) {
	d.printRow(fmtDur(at.Sub(d.start)), what, who, token, note)
}

func (d *demo) printRow(when, what, who, token, note string) {
	line := fmt.Sprintf("  %-7s  %-9s  %-7s  %6s  %s", when, what, who, token, note)
	fmt.Fprintln(d.out, strings.TrimRight(line, " "))
}

func (d *demo) rowElected(t leaderTerm, note string) {
	d.row(t.at, "elected", t.p.label, strconv.FormatUint(t.token, 10), note)
}

// lockRow sums up the holds of the lock since the last lock row.
func (d *demo) lockRow(note string) {
	tokens := d.phaseTokens
	d.phaseTokens = nil
	if len(tokens) == 0 {
		d.row(time.Now(), "lock", "", "", "no holds")
		return
	}
	slices.Sort(tokens)
	var who []string
	for _, t := range tokens {
		if l := d.holds[t].p.label; !slices.Contains(who, l) {
			who = append(who, l)
		}
	}
	slices.Sort(who)
	n := fmt.Sprintf("%d holds of %s, one at a time", len(tokens), demoLock)
	if note != "" {
		n += "; " + note
	}
	d.row(time.Now(), "lock", strings.Join(who, " "),
		fmt.Sprintf("%d-%d", tokens[0], tokens[len(tokens)-1]), n)
}

// takeoverNote says how long the lock stayed with a killed holder, if it
// held the lock when it died.
func (d *demo) takeoverNote(dead *proc) string {
	var next *lockHold // the first hold after the kill
	for _, h := range d.holds {
		if h.start.After(dead.killed) && (next == nil || h.token < next.token) {
			next = h
		}
	}
	if next == nil {
		return ""
	}
	prev, reported := d.holds[next.token-1]
	switch {
	case reported && prev.p == dead && prev.cut:
	case !reported && next.token > 1:
		// The dead process had acquired the lock but not said so yet.
	default:
		return ""
	}
	return fmt.Sprintf("%s died holding it; %s took it over after %s", dead.label, next.p.label, fmtDur(next.start.Sub(dead.killed)))
}

// summary prints the demo's figures: the failover and handoff times, the
// terms in order, and the number of holds of the lock.
func (d *demo) summary(failover, handoff time.Duration, holds int) {
	var names, tokens []string
	for _, l := range d.leaders {
		names = append(names, l.p.label)
		tokens = append(tokens, strconv.FormatUint(l.token, 10))
	}
	fmt.Fprintln(d.out, "\nsummary")
	sum := newTable("", "", "")
	sum.add("failover after SIGKILL", fmtDur(failover), "the dead leader's lease had to expire first (ttl "+fmtDur(d.ttl)+")")
	sum.add("graceful handoff", fmtDur(handoff), "Resign released the lease, the next standby in line took it")
	sum.add("leaders", strings.Join(names, " → "), "terms "+strings.Join(tokens, " < ")+": fencing tokens only grow")
	sum.add("lock "+demoLock, fmt.Sprintf("%d holds", holds), "tokens in order, never two holders at once")
	sum.write(d.out, "  ")
	fmt.Fprintf(d.out, "\ndone in %s. Next: 'dsync server', then 'dsync lock NAME -- CMD' and 'dsync elect NAME -- CMD' (see 'dsync -h').\n",
		fmtDur(time.Since(d.start)))
}

// showStatus prints what `dsync status` shows now.
func (d *demo) showStatus(ctx context.Context) error {
	now := time.Now()
	client, db, err := d.g.connect(ctx)
	if err != nil {
		return err
	}
	defer disconnect(client)
	rctx, cancel := context.WithTimeout(ctx, d.g.timeout)
	defer cancel()
	d.row(now, "status", "", "", "what 'dsync status' shows now:")
	fmt.Fprintln(d.out)
	// Members heartbeat every ttl/3: one seen longer than ttl ago is gone.
	out := newTableSink(d.out, "      ", d.g.db+"."+d.g.collection, selection{})
	if err := d.printStatus(rctx, db, out); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	fmt.Fprintln(d.out)
	return nil
}

// printStatus reads all of db's locks and elections into out, with the
// members seen within the demo's TTL, and prints them.
func (d *demo) printStatus(ctx context.Context, db *mongo.Database, out *tableSink) error {
	store, err := openStatus(ctx, d.g, db, d.ttl)
	if err != nil {
		return err
	}
	defer store.close()
	sum, err := store.read(ctx, selection{}, out)
	if err != nil {
		return err
	}
	return out.done(sum)
}

// checkLock checks that the holds of the lock, in order of their tokens,
// never overlapped, and returns their number.
func (d *demo) checkLock() (int, error) {
	tokens := make([]uint64, 0, len(d.holds))
	for t := range d.holds {
		tokens = append(tokens, t)
	}
	slices.Sort(tokens)
	var prev *lockHold
	for _, t := range tokens {
		h := d.holds[t]
		if h.end.IsZero() {
			return 0, fmt.Errorf("the hold of %s with token %d by %s never ended", demoLock, t, h.p.label)
		}
		if prev != nil && h.start.Before(prev.end) {
			return 0, fmt.Errorf("two holders of %s at once: %s (token %d) until %s, %s (token %d) from %s",
				demoLock, prev.p.label, prev.token, prev.end.Format(time.StampMicro), h.p.label, h.token, h.start.Format(time.StampMicro))
		}
		prev = h
	}
	return len(tokens), nil
}
