//go:build unix

package main

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The bash script completes commands, flags and values as a user types.
func TestCompletionBash(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := runDsync(t, env(""), "", 10*time.Second, "completion", "bash")
	if script.code != 0 {
		t.Fatalf("dsync completion bash: exit %d\n%s", script.code, script.stderr)
	}
	for _, tc := range []struct {
		line   string // the words typed; a trailing space starts a new word
		want   string // COMPREPLY
		subset bool   // want is among COMPREPLY (the shell's commands)
	}{
		{"dsync lo", "lock", false},
		{"dsync --db x st", "status", false},
		{"dsync lock --t", "--ttl --try --timeout", false},
		{"dsync status --j", "--json", false},
		{"dsync elect x --l", "--listen", false},
		{"dsync server --te", "--temp", false},
		{"dsync completion f", "fish", false},
		{"dsync help cl", "clock", false},
		{"dsync --timeout ", "", false},
		{"dsync lock --ttl ", "", false},
		{"dsync lock x -- tru", "true", true},
	} {
		prog := script.stdout + `
COMP_WORDS=(` + tc.line + `)
[[ "` + tc.line + `" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_dsync
printf '%s\n' "${COMPREPLY[@]}" | sort -u | tr '\n' ' '`
		out, err := exec.Command("bash", "--norc", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.line, err, out)
		}
		got := strings.Fields(string(out))
		want := strings.Fields(tc.want)
		slices.Sort(want)
		if tc.subset && !slices.Contains(got, want[0]) || !tc.subset && !slices.Equal(got, want) {
			t.Errorf("completing %q: %q, want %q", tc.line, got, want)
		}
	}
}

// Every flag a command's help lists is completed for it, and no other.
func TestCompletionMatchesHelp(t *testing.T) {
	flagRE := regexp.MustCompile(`(?m)^  (--?[a-z][a-z-]*)`)
	for _, c := range commands {
		if c.summary == "" {
			continue
		}
		var inHelp []string
		if _, flags, ok := strings.Cut(c.usage, "Flags:"); ok {
			for _, m := range flagRE.FindAllStringSubmatch(flags, -1) {
				inHelp = append(inHelp, m[1])
			}
		}
		var completed []string
		for _, f := range commandFlags[c.name] {
			completed = append(completed, strings.Fields(dashed([]completedFlag{f}))...)
		}
		slices.Sort(inHelp)
		slices.Sort(completed)
		if !slices.Equal(inHelp, completed) {
			t.Errorf("dsync %s: help lists flags %q, completion %q", c.name, inHelp, completed)
		}
	}
	var global []string
	_, flags, _ := strings.Cut(usageText, "Flags")
	for _, m := range flagRE.FindAllStringSubmatch(flags, -1) {
		if m[1] != "--version" {
			global = append(global, m[1])
		}
	}
	for _, f := range global {
		if !strings.Contains(" "+dashed(globalFlags)+" ", " "+f+" ") {
			t.Errorf("global flag %s is not completed", f)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := runDsync(t, env(""), "", 10*time.Second, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, "dsync") || !strings.Contains(r.stdout, "listen") {
			t.Errorf("dsync completion %s: exit %d, %d bytes\nstderr: %s", shell, r.code, len(r.stdout), r.stderr)
		}
		if _, err := exec.LookPath(shell); err == nil {
			cmd := exec.Command(shell, "-n")
			cmd.Stdin = strings.NewReader(r.stdout)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s -n on dsync completion %s: %v\n%s", shell, shell, err, out)
			}
		}
	}
	if r := runDsync(t, env(""), "", 10*time.Second, "completion", "tcsh"); r.code != exitUsage {
		t.Errorf("dsync completion tcsh: exit %d, want %d", r.code, exitUsage)
	}
}
