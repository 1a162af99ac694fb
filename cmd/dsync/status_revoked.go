//go:build unix

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/go-dsync/dsync/statuspage"
)

// The revocations dsync status shows after the locks and elections (see
// dsync revoke): who revoked which session, when and why, as the store
// keeps them (statusStore.revocations reads them). Printed only when
// there are any.

// printRevocations prints rs as the table's last lines (--json prints
// them as records of their own: status_json.go).
func printRevocations(w io.Writer, rs []statuspage.Revocation) error {
	if len(rs) == 0 {
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
