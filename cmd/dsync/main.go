//go:build unix

// Command dsync runs commands under distributed locks and leader elections
// kept in MongoDB, and shows them; `dsync demo` shows leader election and
// failover on an embedded server with nothing installed.
//
//	dsync demo                           # three processes, an election, a crash, a handoff
//	dsync server                         # an embedded server for local development
//	dsync lock NAME -- CMD [ARG...]      # run CMD while holding lock NAME
//	dsync lock NAME                      # hold lock NAME until interrupted
//	dsync elect NAME -- CMD [ARG...]     # run CMD only while this process leads NAME
//	dsync elect NAME --listen            # print each new leader of NAME
//	dsync partition NAME --shards N -- CMD  # run CMD for each shard of NAME this process owns
//	dsync status [NAME] [--json]         # locks, holders, election members
//	dsync revoke --key K --reason TEXT   # make K's holder give it up (within one TTL)
//	dsync transfer NAME --to MEMBER      # hand NAME's leadership to a chosen candidate
//	dsync drain PARTITION MEMBER [--undo] # move a member's shards off it, for good
//	dsync clock                          # this clock's offset from the server's
//	dsync completion bash|zsh|fish       # a shell completion script
//
// Run `dsync help` for flags and `dsync help COMMAND` for exit statuses.
// lock exits 122 when its hold was lost (see its help).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-dsync/dsync/internal/errtext"
	"github.com/go-dsync/dsync/internal/ferretserve"
)

// Exit statuses of dsync itself. lock and elect otherwise exit with their
// command's status, so their own failures use the values timeout(1) and
// env(1) made familiar, which commands rarely use, and one below them for
// a lost lock.
const (
	exitOK        = 0
	exitFailure   = 1   // status, clock, server, demo: something went wrong
	exitUsage     = 2   // bad flags or arguments, or no server given; nothing was done
	exitLost      = 122 // lock: the hold was lost, and the command stopped
	exitNotLocked = 124 // lock --try or --wait: the lock was not acquired
	exitDsync     = 125 // lock, elect, once: dsync failed (server unreachable or in error)
	exitNoExec    = 126 // lock, elect: the command could not be run
	exitNotFound  = 127 // lock, elect: the command was not found
)

// A command is one subcommand.
type command struct {
	name    string
	summary string // one line for the command list; "" hides the command
	usage   string // the synopsis and flag help, for `dsync help NAME`
	run     func(g *globals, args []string) int
}

var commands []*command // filled in init, to break the initialization cycle with help

func init() {
	commands = []*command{
		demoCmd, serverCmd, lockCmd, onceCmd, electCmd, partitionCmd, statusCmd, revokeCmd, transferCmd, drainCmd, clockCmd, doctorCmd, completionCmd,
		candidateCmd,
		{name: "version", summary: "print dsync's version", usage: versionUsage, run: runVersion},
		{name: "help", usage: helpUsage, run: runHelp},
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs the command line args and returns the exit status.
func run(args []string) int {
	g := &globals{}
	fs := newFlagSet("dsync", g)
	version := fs.Bool("version", false, "")
	plain, _, err := scanFlags(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		// dsync --help lock: the command's help, as dsync help lock.
		for _, a := range args {
			if c := lookup(a); c != nil && c.usage != "" {
				fmt.Fprint(os.Stdout, c.usage)
				return exitOK
			}
		}
		printUsage(os.Stdout)
		return exitOK
	case err != nil:
		return usageError("", err)
	case *version:
		printVersion(os.Stdout)
		return exitOK
	case len(plain) == 0:
		printUsage(os.Stderr)
		return exitUsage
	}
	name, rest := plain[0], plain[1:]
	c := lookup(name)
	if c == nil {
		return usageError("", fmt.Errorf("unknown command %q", name))
	}
	return c.run(g, rest)
}

const usageText = `dsync: distributed locks and leader election over MongoDB.

Usage: dsync [flags] COMMAND [ARG...]

Commands:
%s
Flags (also accepted after COMMAND):
  --uri URI       MongoDB connection string (default $MONGODB_URI)
  --db NAME       database (default: the one the connection string names,
                  as mongodb://host/app, else %q)
  --collection C  lock collection, which holds the leases of elections
                  too (default %q)
  --elections C   where older releases of dsync kept the leases of
                  elections (default %q): elect refuses to
                  campaign while a candidate of one leads or waits there
  --members C     election member collection (default %q)
  --timeout D     how long to wait for the server to answer (default %v);
                  a refused connection, an unknown host or a failed
                  authentication is reported at once
  -v              say more about what dsync is doing, on stderr
  --wakeups=false wait by polling instead of wake-up events (on by default,
                  dsync.ClientWithWakeups; polling is also the fallback
                  when the server has no tailable cursors)
  --outage-grace D
                  how long an outage of the whole store (a primary
                  election, a restart) holds and terms ride through
                  (default 30s, dsync.DefaultOutageGrace). A holder
                  that dies while no other process renews is replaced
                  up to a grace after its lease expires: the store's
                  record cannot tell its death from an outage. 0: none
  --hints ADDR    also wake processes directly, by UDP hints received on
                  ADDR (host:port; 127.0.0.1:0 for processes on one
                  machine); by default 127.0.0.1:0 where the server is
                  reached over loopback, else off (dsync.ClientWithHints);
                  --hints off: none, where processes on other machines
                  use the server too, through its address
  --hints-advertise ADDR
                  the host:port the other processes send hints to
                  (default: --hints's host, with the port listened on)
  --version       print dsync's version and exit (before COMMAND only)

Run 'dsync help COMMAND' for a command's flags and exit statuses.
Start with 'dsync demo'; for a local server, run 'dsync server'.
`

func printUsage(w io.Writer) {
	var b strings.Builder
	for _, c := range commands {
		if c.summary != "" {
			fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintf(w, usageText, b.String(), defaultDB, defaultCollection, defaultElections, defaultMembers, defaultTimeout)
}

const helpUsage = `Usage: dsync help [COMMAND]

Prints the list of commands and the global flags, or COMMAND's flags and
exit statuses.
`

func runHelp(_ *globals, args []string) int {
	switch {
	case len(args) == 0:
		printUsage(os.Stdout)
		return exitOK
	case len(args) > 1:
		return usageError("help", fmt.Errorf("unexpected argument %q", args[1]))
	}
	c := lookup(args[0])
	if c == nil || c.usage == "" {
		return usageError("help", fmt.Errorf("unknown command %q", args[0]))
	}
	fmt.Fprint(os.Stdout, c.usage)
	return exitOK
}

const versionUsage = `Usage: dsync version

Prints dsync's version, as --version before a command does: the module
version it was built from (or "(devel)" and the commit, for a build in a
work tree; a build without version control stamping, -buildvcs=false,
records no commit, and dsync says so), the Go version and the embedded
FerretDB's.
`

func runVersion(_ *globals, args []string) int {
	if len(args) > 0 {
		return usageError("version", fmt.Errorf("unexpected argument %q", args[0]))
	}
	printVersion(os.Stdout)
	return exitOK
}

// printVersion prints dsync's version (versionText).
func printVersion(w io.Writer) {
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintf(w, "dsync %s (%s; embedded FerretDB %s)\n", versionText(bi, ok), runtime.Version(), ferretserve.Version())
}

// versionText is the module's version as go install records it, with
// the commit when the build recorded one: "(devel)" for a build in a
// work tree, then the commit, or a note that none was recorded.
func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "(unknown: the binary records no build information)"
	}
	version := bi.Main.Version
	var commit, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if commit == "" {
		if version == "(devel)" || version == "" {
			return "(devel), no commit recorded (built with -buildvcs=false, or where go found no version control)"
		}
		return version
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if strings.Contains(version, commit) {
		return version // a pseudo-version names the commit already
	}
	if modified {
		commit += "+modified"
	}
	if when != "" {
		commit += " of " + when
	}
	return version + " " + commit
}

// usageError prints one line about a usage mistake and returns exitUsage.
// The help it points to is the command's, or, for help itself and for
// dsync's own flags, the general one.
func usageError(cmd string, err error) int {
	prefix, hint := "dsync", "dsync -h"
	if cmd != "" {
		prefix = "dsync " + cmd
		if cmd != "help" {
			hint = "dsync help " + cmd
		}
	}
	fmt.Fprintf(os.Stderr, "%s: %s (see '%s')\n", prefix, strings.TrimPrefix(err.Error(), "dsync: "), hint)
	return exitUsage
}

// fail prints err as one line and returns code.
func fail(cmd string, code int, err error) int {
	fmt.Fprintf(os.Stderr, "dsync %s: %v\n", cmd, oneLine(err))
	return code
}

// oneLine flattens a multi-line error message, without the repetitions
// of the driver's messages (see tidy), FerretDB's stack frames, and the
// library's "dsync: " prefix, which the command's own prefix repeats.
func oneLine(err error) string {
	return strings.TrimPrefix(tidy(errtext.Tidy(err).Error()), "dsync: ")
}

// fmtDur formats d for a table: 3 significant figures at most, no
// trailing zeros.
func fmtDur(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d == 0:
		s = "0s"
	case d < time.Millisecond:
		s = d.Round(time.Microsecond).String()
	case d < 10*time.Millisecond:
		s = fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		s = fmt.Sprintf("%dms", d.Round(time.Millisecond)/time.Millisecond)
	case d < time.Minute:
		cs := d.Round(10*time.Millisecond) / (10 * time.Millisecond) // centiseconds
		s = strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%d.%02d", cs/100, cs%100), "0"), ".") + "s"
	case d < time.Hour:
		s = d.Round(time.Second).String()
	default:
		s = d.Round(time.Minute).String()
	}
	if neg {
		return "-" + s
	}
	return s
}
