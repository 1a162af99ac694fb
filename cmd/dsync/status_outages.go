//go:build unix

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/go-dsync/dsync/statuspage"
)

// The outages of the store ridden through, which dsync status shows after
// the stall records: each process that held through an outage (its
// outage grace) records when its session was suspended and resumed and
// how many holds it kept (statusStore.records reads them, those of the
// last day). Printed only when there are any, newest first.

// printOutages prints outages, newest first (as Reader.Outages returns them;
// --json prints them as records of their own: status_json.go).
func printOutages(w io.Writer, outages []statuspage.Outage) error {
	if len(outages) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\noutages ridden through (last day):\n"); err != nil {
		return err
	}
	for _, o := range outages {
		holds := "holds"
		if o.Holds == 1 {
			holds = "hold"
		}
		if _, err := fmt.Fprintf(w, "  suspended at %s for %v, %d %s kept  %s pid %d  (session %s)\n",
			stamp(o.Suspended), o.Resumed.Sub(o.Suspended).Round(time.Millisecond), o.Holds, holds, o.Host, o.PID, o.Session); err != nil {
			return err
		}
	}
	return nil
}
