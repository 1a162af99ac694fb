//go:build unix

package main

import (
	"strings"
	"testing"
	"time"
)

// A --ttl longer than a store allows is refused before connecting, with
// the longest one allowed, which is allowed.
func TestTTLAboveTheMaximum(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"lock", "--ttl", "9999h", "x", "--", "true"},
		{"once", "--ttl", "9999h", "x", "--", "true"},
		{"elect", "--ttl", "9999h", "x", "--", "true"},
	} {
		r := runDsync(t, env(""), "", slow(30*time.Second), args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--ttl 9999h0m0s is too long: at most 5m0s") {
			t.Errorf("dsync %s: exit %d, stderr %q; want %d, and the longest --ttl allowed", strings.Join(args, " "), r.code, r.stderr, exitUsage)
		}
		// The longest is allowed: dsync goes on, and finds no server.
		args[2] = maxTTL.String()
		if r := runDsync(t, env(""), "", slow(30*time.Second), args...); !strings.Contains(r.stderr, "no server") || strings.Contains(r.stderr, "TTL") || strings.Contains(r.stderr, "ttl") {
			t.Errorf("dsync %s: stderr %q; want the TTL allowed, and no server", strings.Join(args, " "), r.stderr)
		}
	}
}
