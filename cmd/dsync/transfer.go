//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

const transferUsage = `Usage: dsync transfer ELECTION --to MEMBER [--reason TEXT] [--wait D] [flags]

Asks the leader of ELECTION (dsync elect, or a leader.Election with a
member store) to hand its leadership to candidate MEMBER, as
leader.Election.Transfer does: the candidates queued ahead of MEMBER step
aside, and once MEMBER's claim is next the leader's term ends (its
command, under dsync elect, gets SIGTERM) and MEMBER leads. Never two
leaders; the gap is one handoff.

transfer reads who leads and in which term, and writes a request for
that term to the member collection (--members), numbered after the
term's earlier requests: one insert (one more for each number another
request, or a retried send of this one, took first). The leader reads the requests of its term at each
heartbeat while it leads (one read per heartbeat) and acts on the latest
it has not acted on yet, once: a request whose MEMBER died or never
queued can be followed by another in the same term, which supersedes it.
A request whose term has ended is ignored, so one that reaches the
server late cannot move a later leader. A leader of a release without
transfer requests ignores them.

transfer then waits until MEMBER leads. MEMBER is a candidate's ID, or
HOST:PID of its process, as 'dsync status' shows them; it must be a live
candidate.

Flags:
  --to MEMBER    the candidate to hand the leadership to (required)
  --reason TEXT  why, kept with the request
  --wait D       how long to wait for MEMBER to lead (default 1m)
  (and the global flags; see 'dsync -h')

Exit status: 0 once MEMBER leads; 1 on failure (the server cannot be
reached, MEMBER is no live candidate, nobody leads, the term ended
with another leader, or --wait passed first); 2: usage error.
`

var transferCmd = &command{
	name:    "transfer",
	summary: "hand an election's leadership to a chosen candidate",
	usage:   transferUsage,
	run:     runTransfer,
}

// transferArgs are dsync transfer's command line.
type transferArgs struct {
	name, to, reason string
	wait             time.Duration
}

// parseTransfer parses dsync transfer's command line. When it fails, it
// has said why and code is the exit status.
func parseTransfer(g *globals, args []string) (a transferArgs, code int, ok bool) {
	fs := newFlagSet("transfer", g)
	fs.StringVar(&a.to, "to", "", "")
	fs.StringVar(&a.reason, "reason", "", "")
	fs.DurationVar(&a.wait, "wait", time.Minute, "")
	pos, _, code, err := parseArgs(fs, transferUsage, args, false)
	if err != nil {
		return a, code, false
	}
	switch {
	case len(pos) == 0:
		err = errors.New("missing ELECTION")
	case len(pos) > 1:
		err = fmt.Errorf("unexpected argument %q", pos[1])
	case a.to == "":
		err = errors.New("--to is required")
	case a.wait <= 0:
		err = fmt.Errorf("--wait must be positive, got %v", a.wait)
	default:
		a.name = pos[0]
		err = checkName(a.name, maxElectionName)
	}
	if err != nil {
		return a, usageError("transfer", err), false
	}
	return a, 0, true
}

func runTransfer(g *globals, args []string) int {
	a, code, ok := parseTransfer(g, args)
	if !ok {
		return code
	}
	name := a.name
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	c, members, closeAll, code, ok := openDirectives(ctx, g, "transfer")
	if !ok {
		return code
	}
	defer closeAll()
	e, err := leader.NewElection(c, name, leader.WithMembers(members))
	if err != nil {
		return fail("transfer", exitFailure, err)
	}
	defer e.Close()
	id, err := resolveMember(ctx, members, name, a.to)
	if err != nil {
		return fail("transfer", exitFailure, err)
	}
	info, err := e.Leader(ctx)
	if err != nil {
		return fail("transfer", exitFailure, err)
	}
	if info.ID == id {
		fmt.Printf("%s leads %q already (term %d)\n", id, name, info.Token)
		return exitOK
	}
	live, err := e.Members(ctx)
	if err != nil {
		return fail("transfer", exitFailure, err)
	}
	if !slices.ContainsFunc(live, func(m leader.Member) bool { return m.ID == id }) {
		return fail("transfer", exitFailure, fmt.Errorf("%w: %q in %q", leader.ErrNotCandidate, id, name))
	}
	req, err := operator.RequestTransfer(ctx, c, members, name, info.Token, id, revoker(), a.reason)
	if err != nil {
		return fail("transfer", exitFailure, err)
	}
	fmt.Printf("asked the leader of %q (term %d, %s pid %d) to hand over to %s (request %d of the term)\n", name, info.Token, info.Host, info.PID, id, req.Gen)
	wctx, wcancel := context.WithTimeout(context.Background(), a.wait)
	defer wcancel()
	now, err := awaitTransfer(wctx, e, info.Token, id)
	if err != nil {
		return fail("transfer", exitFailure, err)
	}
	fmt.Printf("%s leads %q (term %d)\n", id, name, now.Token)
	return exitOK
}

// awaitTransfer reads who leads e's election until to does (its Info),
// another candidate leads in a term after term, or ctx ends.
func awaitTransfer(ctx context.Context, e *leader.Election, term uint64, to string) (leader.Info, error) {
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := e.Leader(rctx)
		cancel()
		switch {
		case err == nil && info.ID == to:
			return info, nil
		case err == nil && info.Token != term:
			return info, fmt.Errorf("term %d ended, and %s (%s pid %d) leads in term %d, not %s", term, info.ID, info.Host, info.PID, info.Token, to)
		}
		select {
		case <-ctx.Done():
			return leader.Info{}, fmt.Errorf("%s did not lead within --wait (term %d still leads, or nobody does)", to, term)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
