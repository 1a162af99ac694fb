//go:build unix

package main

import (
	"testing"

	"github.com/go-dsync/dsync/leader"
)

// The steering flags reach the Election's options, and --version-rule
// without a --version is a usage error.
func TestElectSteeringFlags(t *testing.T) {
	g := &globals{}
	f, _, _, _, ok := parseElect(g, []string{"--priority", "5", "--preempt-after", "2s", "--version", "1.2.0", "--version-rule", "job", "--", "true"})
	if !ok {
		t.Fatal("steering flags refused")
	}
	if f.priority != 5 || f.preempt.Seconds() != 2 || !f.versions {
		t.Errorf("parsed %+v", f)
	}
	if _, _, _, _, ok := parseElect(g, []string{"--version-rule", "job", "--", "true"}); ok {
		t.Error("--version-rule without --version accepted")
	}
	d, _, _, _, _ := parseElect(g, []string{"job", "--", "true"})
	if d.preempt >= 0 {
		t.Errorf("default --preempt-after %v, want none (negative)", d.preempt)
	}
}

func TestVersionCellShowsPriority(t *testing.T) {
	for _, tc := range []struct {
		m    leader.Member
		want string
	}{
		{leader.Member{Version: "1.4.0"}, "1.4.0"},
		{leader.Member{Version: "1.4.0", Priority: 5}, "1.4.0 p5"},
		{leader.Member{Priority: -1}, "- p-1"},
	} {
		if got := versionCell(tc.m); got != tc.want {
			t.Errorf("versionCell(%+v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
