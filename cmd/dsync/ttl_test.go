//go:build unix

package main

import (
	"strings"
	"testing"
	"time"
)

// A --ttl longer than a store allows is refused before connecting, with
// the longest one allowed.
func TestTTLAboveTheMaximum(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"lock", "--ttl", "9999h", "x", "--", "true"},
		{"once", "--ttl", "9999h", "x", "--", "true"},
		{"elect", "--ttl", "9999h", "x", "--", "true"},
	} {
		r := runDsync(t, env(""), "", slow(30*time.Second), args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "use a TTL of at most 5m0s") || strings.Contains(r.stderr, "coverage") {
			t.Errorf("dsync %s: exit %d, stderr %q; want %d, and the longest TTL allowed", strings.Join(args, " "), r.code, r.stderr, exitUsage)
		}
	}
}
