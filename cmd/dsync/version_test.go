//go:build unix

package main

import (
	"runtime/debug"
	"testing"
)

// TestVersionText: dsync version says what the build recorded: the
// module's version, the commit and whether the tree was modified, and
// when no commit was recorded (-buildvcs=false), says so rather than
// print a bare "(devel)".
func TestVersionText(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"v1.2.3", nil, "v1.2.3"},
		{"(devel)", settings("-buildvcs", "false"), "(devel), no commit recorded (built with -buildvcs=false, or where go found no version control)"},
		{"(devel)", settings("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-11-28T06:00:00Z", "vcs.modified", "true"),
			"(devel) 0123456789ab+modified of 2026-11-28T06:00:00Z"},
		{"v0.0.0-20261128060000-0123456789ab+dirty", settings("vcs.revision", "0123456789abcdef0123", "vcs.modified", "true"),
			"v0.0.0-20261128060000-0123456789ab+dirty"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Version: tc.version}, Settings: tc.settings}
		if got := versionText(bi, true); got != tc.want {
			t.Errorf("versionText(%s, %v) = %q, want %q", tc.version, tc.settings, got, tc.want)
		}
	}
	if got := versionText(nil, false); got == "" || got == "(devel)" {
		t.Errorf("versionText without build information = %q, want it to say so", got)
	}
}
