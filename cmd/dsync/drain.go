//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-dsync/dsync/leader/operator"
)

const drainUsage = `Usage: dsync drain PARTITION MEMBER [--undo] [--reason TEXT] [flags]

Drains member MEMBER of partition PARTITION (dsync partition, or a
leader.Partition): no shard is assigned to it any more, so the shards it
owns move to the other members (each once the member it is now assigned
to waits for it, as when a member joins), and none comes back while it
stays drained. The members read the drain at their next heartbeat. A
drain names one membership: a process that restarts (or a Partition
made again) joins under a new ID, undrained. When every live member is
drained, each keeps the shards it owns: a drain never leaves a shard
without an owner. --undo undrains it: it takes its share again.

MEMBER is the member's ID, or HOST:PID of its process, and must be one
of the members of PARTITION that wrote their status in the last %s
(with --undo, or a drained one, as 'dsync status' lists them): a name
that is not there is an error that names what is, and nothing is
written. The drain is one insert into the member collection
(--members), and never updated or deleted: an undrain is a later
record, so a drain that reaches the server late cannot undo it.

Flags:
  --undo         undrain MEMBER
  --reason TEXT  why, kept with the record
  (and the global flags; see 'dsync -h')

Exit status: 0 when the record is written; 1 on failure (the server
cannot be reached, PARTITION has no member, or MEMBER is not one of
them); 2: usage error.
`

var drainHelp = fmt.Sprintf(drainUsage, fmtDur(directiveSeen))

var drainCmd = &command{
	name:    "drain",
	summary: "move a partition member's shards off it, for good or until --undo",
	usage:   drainHelp,
	run:     runDrain,
}

func runDrain(g *globals, args []string) int {
	fs := newFlagSet("drain", g)
	undo := fs.Bool("undo", false, "")
	reason := fs.String("reason", "", "")
	pos, _, code, err := parseArgs(fs, drainHelp, args, false)
	if err != nil {
		return code
	}
	switch {
	case len(pos) < 2:
		return usageError("drain", errors.New("give PARTITION and MEMBER"))
	case len(pos) > 2:
		return usageError("drain", fmt.Errorf("unexpected argument %q", pos[2]))
	}
	partition := pos[0]
	if err := checkName(partition+"#0", maxElectionName); err != nil {
		return usageError("drain", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	c, members, closeAll, code, ok := openDirectives(ctx, g, "drain")
	if !ok {
		return code
	}
	defer closeAll()
	id, err := drainTarget(ctx, c, members, g.db+"."+g.collection, partition, pos[1], *undo)
	if err != nil {
		return fail("drain", exitFailure, err)
	}
	d, err := operator.Drain(ctx, members, partition, id, !*undo, revoker(), *reason)
	if err != nil {
		return fail("drain", exitFailure, err)
	}
	what := "drained"
	if *undo {
		what = "undrained"
	}
	fmt.Printf("%s member %s of %q (generation %d, by %s)\n", what, id, partition, d.Gen, d.By)
	return exitOK
}
