//go:build unix

package main

// What dsync drain and dsync transfer share: the member store they write
// operator directives to, and how a member is named on the command line.

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// directiveSeen is how recently a member must have written its status to
// be found by HOST:PID: longer than any member's liveness (four heartbeat
// intervals of a TTL of at most 5m).
const directiveSeen = 10 * time.Minute

// openDirectives connects and returns a Client (for elections' leases)
// and the member store, which serves directives. Close the Client when
// done; it closes the connection's store too.
func openDirectives(ctx context.Context, g *globals, name string) (*dsync.Client, *leadermongo.Store, func(), int, bool) {
	mc, db, err := g.connect(ctx)
	if err != nil {
		if isUsage(err) {
			return nil, nil, nil, fail(name, exitUsage, err), false
		}
		return nil, nil, nil, fail(name, exitFailure, err), false
	}
	// These commands say what they did; the library's warnings would
	// only interleave with that.
	logger := slog.New(slog.DiscardHandler)
	c, store, err := g.lockClient(db, logger, 0)
	if err != nil {
		disconnect(mc)
		return nil, nil, nil, fail(name, exitFailure, err), false
	}
	members, err := g.memberStore(store)
	if err != nil {
		c.Close()
		disconnect(mc)
		return nil, nil, nil, fail(name, exitFailure, err), false
	}
	return c, members, func() { c.Close(); disconnect(mc) }, 0, true
}

// resolveMember returns the ID of the member of election that who names:
// its ID, or HOST:PID of its process (as dsync status shows them), which
// must match one member seen within directiveSeen.
func resolveMember(ctx context.Context, ms leader.MemberStore, election, who string) (string, error) {
	if _, ok := hostPID(who); !ok {
		return who, nil // an ID
	}
	all, err := ms.Members(ctx, election, directiveSeen)
	if err != nil {
		return "", err
	}
	return matchMember(all, election, who)
}

// hostPID reports whether who is HOST:PID rather than a member's ID, and
// its pid if so.
func hostPID(who string) (int, bool) {
	host, pidText, ok := strings.Cut(who, ":")
	pid, err := strconv.Atoi(pidText)
	return pid, ok && err == nil && host != ""
}

// matchMember returns the ID of the one member of all (members of
// election) that who names: its ID, or HOST:PID of its process. A
// HOST:PID that matches none, or more than one, is an error; an ID is
// returned as it is.
func matchMember(all []leader.Member, election, who string) (string, error) {
	pid, ok := hostPID(who)
	if !ok {
		return who, nil
	}
	host, _, _ := strings.Cut(who, ":")
	var found []string
	for _, m := range all {
		if m.Host == host && m.PID == pid {
			found = append(found, m.ID)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no member of %q runs as %s", election, who)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%d members of %q run as %s (%s): give the ID", len(found), election, who, strings.Join(found, ", "))
}
