package main

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Background problems that keep coming (a server down for 10 minutes, an
// acquire retried every second) print a line at growing intervals, each
// counting those it stands for; after a quiet spell, the next prints at
// once.
func TestProblemsAreRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		r := &reporter{w: &out}
		for range 630 {
			r.problem("acquire \"k\": server down")
			time.Sleep(time.Second)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) < 5 || len(lines) > 12 {
			t.Errorf("%d lines over 10.5 minutes of a problem a second:\n%s", len(lines), out.String())
		}
		if !strings.Contains(lines[len(lines)-1], "more like it") {
			t.Errorf("the last line does not count the problems it stands for: %q", lines[len(lines)-1])
		}
		out.Reset()
		time.Sleep(10 * time.Minute)
		r.problem("acquire \"k\": server down again")
		if !strings.Contains(out.String(), "down again") {
			t.Errorf("after a quiet spell, a problem printed %q, want it at once", out.String())
		}
	})
}
