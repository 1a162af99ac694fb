//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
)

const doctorUsage = `Usage: dsync doctor [--ttl D] [--renew D] [--json] [flags]

Checks the deployment behind --uri for dsync, in a few seconds, and says
pass, warn or fail for each check, with what to do:

  server          MongoDB or FerretDB, its version, standalone, replica
                  set or sharded cluster
  write concern   a majority write is acknowledged, and how fast
  wake-ups        capped collections and tailable cursors work, and how
                  soon an event reaches a waiting cursor
  lock index      the lock collection's index exists or can be made
  sharding        the collections are sharded only in ways dsync allows
  privileges      what the server refused in the checks above
  clock           this machine's clock against the server's
  member skew     the members' clock skew dsync assumes; on a replica set
                  or a sharded cluster only (a standalone server has one
                  clock: the line is left out)
  failover        whether a hold with --ttl outlasts a primary election,
                  or --outage-grace (global; default 30s) covers it (a
                  standalone server has none: it passes, and says so)
  product         Amazon DocumentDB, Azure Cosmos DB, FerretDB 1 or 2:
                  each of its quirks, what it means for dsync, the fix
  _id index       only on FerretDB 1 over PostgreSQL: whether PostgreSQL
                  serves a find by _id on the lock and sessions
                  collections from an index, or reads the whole table at
                  each of a Lock's reads (told from 1,000 documents on:
                  below, PostgreSQL may read a small table whole anyway)

When the server cannot be reached, no check runs: with --json, the array
holds one finding, the server check failed, with the reason.

It writes only to two scratch collections named after the lock collection
(_doctor and _doctor_events), and drops them.

Flags:
  --ttl D     the TTL the locks use (default 15s, dsync's)
  --renew D   their renew interval (default a third of the TTL)
  --json      print the findings as a JSON array
  (and the global flags; see 'dsync -h')

Exit status: 0 when nothing failed (warnings allowed); 1 when a check
failed, or the server cannot be reached; 2: usage error.
`

var doctorCmd = &command{
	name:    "doctor",
	summary: "check a deployment for dsync",
	usage:   doctorUsage,
	run:     runDoctor,
}

func runDoctor(g *globals, args []string) int {
	fs := newFlagSet("doctor", g)
	ttl := fs.Duration("ttl", dsync.DefaultTTL, "")
	renew := fs.Duration("renew", 0, "")
	asJSON := fs.Bool("json", false, "")
	pos, _, code, err := parseArgs(fs, doctorUsage, args, false)
	if err != nil {
		return code
	}
	switch {
	case len(pos) > 0:
		return usageError("doctor", fmt.Errorf("unexpected argument %q", pos[0]))
	case *ttl <= 0:
		return usageError("doctor", fmt.Errorf("--ttl must be positive, got %v", *ttl))
	case *renew < 0:
		return usageError("doctor", fmt.Errorf("--renew must not be negative, got %v", *renew))
	}
	ctx := context.Background()
	client, db, err := g.connect(ctx)
	if err != nil {
		if isUsage(err) {
			return fail("doctor", exitUsage, err)
		}
		if *asJSON {
			// A script reading the findings gets them, this one too.
			_ = writeJSONFindings([]dsyncmongo.Finding{{Check: "server", Status: dsyncmongo.Fail, Found: oneLine(err),
				Fix: "check the URI, that the server runs, the network path and the credentials"}})
		}
		return fail("doctor", exitFailure, err)
	}
	defer disconnect(client)
	// The checks bound themselves (about 30 s at worst); --timeout bounds
	// each, not the whole.
	ctx, cancel := context.WithTimeout(ctx, max(g.timeout, 45*time.Second))
	defer cancel()
	dc := dsyncmongo.DoctorConfig{TTL: *ttl, RenewInterval: *renew}
	if g.outageGraceSet {
		dc.OutageGrace = g.outageGrace
		if g.outageGrace == 0 {
			dc.OutageGrace = -1 // none
		}
	}
	findings, err := dsyncmongo.Doctor(ctx, db, dc, dsyncmongo.WithCollection(g.collection))
	if err != nil {
		return usageError("doctor", err)
	}
	findings = append(findings, lookAlikeFindings(ctx, g, db)...)
	if *asJSON {
		if err := writeJSONFindings(findings); err != nil {
			return fail("doctor", exitFailure, err)
		}
	} else {
		writeFindings(os.Stdout, findings)
	}
	for _, f := range findings {
		if f.Status == dsyncmongo.Fail {
			return exitFailure
		}
	}
	return exitOK
}

// writeJSONFindings prints the findings on stdout as a JSON array.
func writeJSONFindings(findings []dsyncmongo.Finding) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(findings)
}

// writeFindings prints one line per finding (status, check, what was
// found) and the fix under it.
func writeFindings(w io.Writer, findings []dsyncmongo.Finding) {
	width := 0
	for _, f := range findings {
		width = max(width, len(f.Check))
	}
	pad := strings.Repeat(" ", 4+2+width+2)
	for _, f := range findings {
		fmt.Fprintf(w, "%-4s  %-*s  %s\n", strings.ToUpper(f.Status.String()), width, f.Check, f.Found)
		if f.Fix != "" {
			fmt.Fprintf(w, "%sfix: %s\n", pad, f.Fix)
		}
	}
}
