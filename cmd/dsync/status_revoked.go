//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// The revocations dsync status shows after the locks and elections (see
// dsync revoke): who revoked which session, when and why, as the store
// keeps them (statusStore.revocations reads them). Printed only when
// there are any.

// jsonRevocation is a revocation's line in dsync status --json.
type jsonRevocation struct {
	Kind    string    `json:"kind"` // "revocation"
	Session string    `json:"session"`
	By      string    `json:"by"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"` // store time
}

// printRevocations prints rs as a table, or as JSON lines.
func printRevocations(w io.Writer, rs []dsync.Revocation, asJSON bool) error {
	if len(rs) == 0 {
		return nil
	}
	if asJSON {
		enc := json.NewEncoder(w)
		for _, r := range rs {
			if err := enc.Encode(jsonRevocation{Kind: "revocation", Session: r.Session, By: r.By, Reason: r.Reason, At: r.At}); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := fmt.Fprintf(w, "\nrevoked sessions:\n"); err != nil {
		return err
	}
	for _, r := range rs {
		if _, err := fmt.Fprintf(w, "  %s  by %s at %s: %s\n", r.Session, r.By, r.At.UTC().Format(time.RFC3339), r.Reason); err != nil {
			return err
		}
	}
	return nil
}
