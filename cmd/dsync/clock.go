//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-dsync/dsync/clockcheck"
)

const clockUsage = `Usage: dsync clock [--max D] [flags]

Measures this machine's wall clock against the server's (the best of 5
round trips) and shows the offset with its uncertainty: half the round
trip plus the server clock's 1 ms resolution. Locks do not depend on it
(expiry is judged in server time), but logs and member status read the
local clock, and an offset over half a second means that clock
synchronization is broken.

Flags:
  --max D   the largest offset accepted (default 500ms)
  (and the global flags; see 'dsync -h')

Exit status: 0 when the offset may be within --max; 1 when it is certainly
over, or the server cannot be reached; 2: usage error.
`

var clockCmd = &command{
	name:    "clock",
	summary: "show this machine's clock offset from the server's",
	usage:   clockUsage,
	run:     runClock,
}

func runClock(g *globals, args []string) int {
	fs := newFlagSet("clock", g)
	maxOffset := fs.Duration("max", clockcheck.DefaultMaxOffset, "")
	pos, _, code, err := parseArgs(fs, clockUsage, args, false)
	if err != nil {
		return code
	}
	switch {
	case len(pos) > 0:
		return usageError("clock", fmt.Errorf("unexpected argument %q", pos[0]))
	case *maxOffset < 0:
		return usageError("clock", fmt.Errorf("--max must not be negative, got %v", *maxOffset))
	}
	ctx := context.Background()
	client, db, err := g.connect(ctx)
	if err != nil {
		if isUsage(err) {
			return fail("clock", exitUsage, err)
		}
		return fail("clock", exitFailure, err)
	}
	defer disconnect(client)
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	s, err := clockcheck.Check(ctx, db, *maxOffset)
	var over *clockcheck.OffsetError
	if err != nil && !errors.As(err, &over) {
		return fail("clock", exitFailure, err)
	}

	side := "the server's clock is ahead of this machine's"
	switch {
	case s.Offset.Abs() <= s.Uncertainty:
		side = "the clocks agree within the uncertainty"
	case s.Offset < 0:
		side = "the server's clock is behind this machine's"
	}
	verdict := "ok"
	if over != nil {
		verdict = "OVER the limit"
	}
	t := newTable("", "")
	t.add("offset", fmt.Sprintf("%s ± %s (%s)", signed(s.Offset), fmtDur(s.Uncertainty), side))
	t.add("rtt", fmtDur(s.RTT)+" (best of 5 round trips)")
	t.add("limit", fmt.Sprintf("%s: %s", fmtDur(*maxOffset), verdict))
	t.write(os.Stdout, "")
	if over != nil {
		return fail("clock", exitFailure, over)
	}
	return exitOK
}

// signed formats d with its sign.
func signed(d time.Duration) string {
	if d < 0 {
		return fmtDur(d)
	}
	return "+" + fmtDur(d)
}
