//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

const completionUsage = `Usage: dsync completion bash|zsh|fish

Prints a script that completes dsync's commands and flags in the shell:

  bash:  source <(dsync completion bash)     (in ~/.bashrc)
  zsh:   source <(dsync completion zsh)      (in ~/.zshrc, after compinit)
  fish:  dsync completion fish > ~/.config/fish/completions/dsync.fish

After '--', the shell's own completion of commands and files applies.

Exit status: 0; 2: usage error.
`

var completionCmd = &command{
	name:    "completion",
	summary: "print a shell completion script (bash, zsh, fish)",
	usage:   completionUsage,
	run:     runCompletion,
}

// A completedFlag is a flag the completion scripts offer.
type completedFlag struct {
	name  string // without dashes
	value string // what its value is: "" for a switch, "dir" for a directory, else anything
}

// globalFlags are accepted by every command.
var globalFlags = []completedFlag{
	{"uri", "uri"}, {"db", "name"}, {"collection", "name"}, {"elections", "name"}, {"members", "name"},
	{"timeout", "duration"}, {"v", ""}, {"wakeups", ""}, {"outage-grace", "duration"},
	{"hints", "addr"}, {"hints-advertise", "addr"}, {"help", ""},
}

// commandFlags are each command's own flags.
var commandFlags = map[string][]completedFlag{
	"demo":       {{"ttl", "duration"}},
	"server":     {{"addr", "addr"}, {"data", "dir"}, {"temp", ""}},
	"lock":       {{"ttl", "duration"}, {"grace", "duration"}, {"wait", "duration"}, {"try", ""}, {"n", "count"}},
	"once":       {{"ttl", "duration"}, {"grace", "duration"}, {"wait", "duration"}, {"check", ""}, {"forget-after", "duration"}},
	"elect":      {{"ttl", "duration"}, {"grace", "duration"}, {"version", "string"}, {"listen", ""}, {"progress", "duration"}, {"priority", "number"}, {"preempt-after", "duration"}, {"version-rule", ""}},
	"partition":  {{"shards", "number"}, {"weight", "number"}, {"ttl", "duration"}, {"grace", "duration"}, {"progress", "duration"}},
	"status":     {{"seen", "duration"}, {"json", ""}, {"prefix", "name"}, {"limit", "number"}, {"after", "name"}, {"web", ""}, {"addr", "addr"}},
	"revoke":     {{"key", "name"}, {"process", "string"}, {"reason", "string"}},
	"transfer":   {{"to", "string"}, {"reason", "string"}, {"wait", "duration"}},
	"drain":      {{"undo", ""}, {"reason", "string"}},
	"clock":      {{"max", "duration"}},
	"doctor":     {{"ttl", "duration"}, {"renew", "duration"}, {"json", ""}},
	"completion": {},
	"help":       {},
}

func runCompletion(g *globals, args []string) int {
	fs := newFlagSet("completion", g)
	pos, _, code, err := parseArgs(fs, completionUsage, args, false)
	if err != nil {
		return code
	}
	if len(pos) != 1 {
		return usageError("completion", errors.New("name one shell: bash, zsh or fish"))
	}
	switch pos[0] {
	case "bash":
		fmt.Fprint(os.Stdout, bashCompletion())
	case "zsh":
		fmt.Fprint(os.Stdout, "#compdef dsync\n# zsh completion for dsync: source <(dsync completion zsh)\n"+
			"autoload -U +X bashcompinit && bashcompinit\n"+bashCompletion())
	case "fish":
		fmt.Fprint(os.Stdout, fishCompletion())
	default:
		return usageError("completion", fmt.Errorf("unknown shell %q: bash, zsh or fish", pos[0]))
	}
	return exitOK
}

// commandNames are the commands listed in dsync's usage, in order.
func commandNames() []string {
	var names []string
	for _, c := range commands {
		if c.summary != "" || c.name == "help" {
			names = append(names, c.name)
		}
	}
	return names
}

func dashed(fs []completedFlag) string {
	var b []string
	for _, f := range fs {
		if len(f.name) == 1 {
			b = append(b, "-"+f.name)
		} else {
			b = append(b, "--"+f.name)
		}
	}
	return strings.Join(b, " ")
}

func bashCompletion() string {
	var valued []string
	for _, f := range globalFlags {
		if f.value != "" {
			valued = append(valued, "--"+f.name)
		}
	}
	var cases strings.Builder
	for _, name := range commandNames() {
		fmt.Fprintf(&cases, "        %s) flags=%q;;\n", name, dashed(commandFlags[name]))
	}
	for _, name := range commandNames() {
		for _, f := range commandFlags[name] {
			if f.value != "" && !slices.Contains(valued, "--"+f.name) {
				valued = append(valued, "--"+f.name)
			}
		}
	}
	return fmt.Sprintf(`# bash completion for dsync: source <(dsync completion bash)
_dsync() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    local commands=%q globals=%q
    local cmd="" i j
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            %s) ((i++));;
            -*) ;;
            *) cmd="${COMP_WORDS[i]}"; break;;
        esac
    done
    for ((j = i + 1; j < COMP_CWORD; j++)); do
        if [[ -n $cmd && ${COMP_WORDS[j]} == -- ]]; then
            COMPREPLY=($(compgen -c -- "$cur"))
            return
        fi
    done
    case $prev in
        --data) COMPREPLY=($(compgen -d -- "$cur")); return;;
        %s) return;;
    esac
    if [[ -z $cmd ]]; then
        COMPREPLY=($(compgen -W "$commands $globals --version" -- "$cur"))
        return
    fi
    local flags=""
    case $cmd in
%s    esac
    case $cmd in
        help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return;;
        completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return;;
    esac
    COMPREPLY=($(compgen -W "$flags $globals" -- "$cur"))
}
complete -F _dsync dsync
`, strings.Join(commandNames(), " "), dashed(globalFlags), strings.Join(valued, "|"), strings.Join(valued, "|"), cases.String())
}

func fishCompletion() string {
	var b strings.Builder
	b.WriteString("# fish completion for dsync: dsync completion fish > ~/.config/fish/completions/dsync.fish\n")
	b.WriteString("complete -c dsync -f\n")
	for _, c := range commands {
		if c.summary != "" || c.name == "help" {
			summary := c.summary
			if c.name == "help" {
				summary = "show the usage of dsync or of a command"
			}
			fmt.Fprintf(&b, "complete -c dsync -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(summary))
		}
	}
	add := func(cond string, f completedFlag) {
		opt := "-l " + f.name
		if len(f.name) == 1 {
			opt = "-s " + f.name
		}
		switch f.value {
		case "":
		case "dir":
			opt += " -r -F"
		default:
			opt += " -r"
		}
		fmt.Fprintf(&b, "complete -c dsync%s %s\n", cond, opt)
	}
	for _, f := range globalFlags {
		add("", f)
	}
	add(" -n __fish_use_subcommand", completedFlag{"version", ""})
	for _, name := range commandNames() {
		for _, f := range commandFlags[name] {
			add(" -n '__fish_seen_subcommand_from "+name+"'", f)
		}
	}
	b.WriteString("complete -c dsync -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
	fmt.Fprintf(&b, "complete -c dsync -n '__fish_seen_subcommand_from help' -a '%s'\n", strings.Join(commandNames(), " "))
	return b.String()
}

func fishQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
