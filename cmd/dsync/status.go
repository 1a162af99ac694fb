//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// dsync status: the command, its flags and exit statuses. What it reads
// is in status_read.go, how it prints it in status_table.go and
// status_json.go.

const statusUsage = `Usage: dsync status [NAME] [flags]

Lists the locks and the elections in the lock collection, with the
elections' members, judged in the server's time:

  STATE      held (a live claim heads the lock's queue); free (no claim
             holds or waits: every one was released, withdrawn, or ended
             with its holder's session)
  TOKEN      the fencing token of the holder (an election's TERM); "-"
             when free
  HOST, PID  the process holding the lock or leading: dsync lock or dsync
             elect, or a program using the library; "-" when nobody holds
  CMD PID    the command that dsync runs under the lock, for holders on
             this machine (found among the holder's child processes)
  HELD FOR   since the holder queued for the lock: for a holder that
             waited behind others, its wait is counted too
  EXPIRES IN when the holder's session expires unless renewed
  WAITING    live claims queued behind the holder: Lock calls waiting
  LAST SEEN  a candidate's last heartbeat

A lock is listed as long as the collection keeps documents of it, held or
not. Reading who holds a lock records, as any waiter would, that a claim
whose session expired has ended.

Names longer than 40 characters are cut short in the table; --json shows
them whole. With NAME (after '--' if it starts with '-'), only the lock
NAME and the election NAME.

Flags:
  --seen D   list the election members whose last heartbeat is at most D
             old (default %v: three heartbeats of a candidate with the
             default --ttl; dsync elect heartbeats at least every %v)
  --json     print one JSON object instead of tables
  (and the global flags; see 'dsync -h')

Exit status: 0; 1 if the server cannot be read or NAME is neither a lock
nor an election; 2: usage error.
`

// defaultSeen is how recent a member's heartbeat must be for status to
// list it: three heartbeats of a candidate with the default TTL, which is
// how long leader.Election.Members counts one live.
const defaultSeen = leader.DefaultTTL

var statusCmd = &command{
	name:    "status",
	summary: "list locks, their holders and the members of elections",
	usage:   statusHelp,
	run:     runStatus,
}

var statusHelp = fmt.Sprintf(statusUsage, defaultSeen, maxHeartbeat)

func runStatus(g *globals, args []string) int {
	fs := newFlagSet("status", g)
	seen := fs.Duration("seen", defaultSeen, "")
	asJSON := fs.Bool("json", false, "")
	pos, _, code, err := parseArgs(fs, statusHelp, args, false)
	if err != nil {
		return code
	}
	switch {
	case len(pos) > 1:
		return usageError("status", fmt.Errorf("unexpected argument %q", pos[1]))
	case *seen <= 0:
		return usageError("status", fmt.Errorf("--seen must be positive, got %v", *seen))
	}
	name := ""
	if len(pos) == 1 {
		name = pos[0]
		if err := checkName(name, maxLockName); err != nil {
			return usageError("status", err)
		}
	}
	ctx := context.Background()
	client, db, err := g.connect(ctx)
	if err != nil {
		if errors.Is(err, errNoServer) {
			return fail("status", exitUsage, err)
		}
		return fail("status", exitFailure, err)
	}
	defer disconnect(client)
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	st, err := readStatus(ctx, g, db, name, *seen)
	if err != nil {
		return fail("status", exitFailure, err)
	}
	if name != "" && len(st.locks) == 0 && len(st.elections) == 0 {
		return fail("status", exitFailure, fmt.Errorf("no lock or election named %q in %s.%s", name, g.db, g.collection))
	}
	st.findCommands()
	if *asJSON {
		if err := st.writeJSON(os.Stdout); err != nil {
			return fail("status", exitFailure, err)
		}
		return exitOK
	}
	if len(st.locks) == 0 && len(st.elections) == 0 {
		fmt.Printf("no locks or elections in %s.%s\n", g.db, g.collection)
		return exitOK
	}
	if st.write(os.Stdout, "") {
		fmt.Printf("\n(names cut to %d characters; 'dsync status --json' shows them whole)\n", maxNameWidth)
	}
	return exitOK
}

// A status is what `dsync status` shows.
type status struct {
	now       time.Time     // server time when read
	within    time.Duration // uncertainty of now
	locks     []lockState   // plain locks, by key
	elections []election    // by name

	// commands are the pids of the commands that holders on this host
	// run, by holder pid (see findCommands).
	commands map[int]int
}

// A lockState is what status shows of one lock: its key as stored, and
// its queue as dsync.Client.Queue reads it.
type lockState struct {
	key string
	// holder is the head of the queue: the claim that holds, or is
	// about to; nil when nothing holds or waits.
	holder *dsync.ClaimInfo
	// waiting counts the claims queued behind the holder.
	waiting int
}

func (l lockState) state() string {
	if l.holder != nil {
		return "held"
	}
	return "free"
}

// An election is what status shows of one election.
type election struct {
	name string
	// leader is who leads (leader.Backend.Leader); nil when nobody does.
	leader *leader.Info
	// lease is the leader's claim on leader.LockKey(name), for its
	// expiry; nil when nobody leads, or when the term ended while it was
	// read.
	lease   *dsync.ClaimInfo
	members []leader.Member
}
