//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/statuspage"
)

const revokeUsage = `Usage: dsync revoke (--key K | --process SESSION) --reason TEXT [flags]

Revokes a process's lease: it records who revoked it, when and why in
the store (one insert, and no other write). The process reads that
record every two thirds of a TTL while it holds (every two TTLs while it
only waits, and when it comes to hold, at once if its last read is older
than two thirds of a TTL), stops
renewing and loses every hold at once (its Lost() closes with
ErrRevoked, and dsync lock exits 122), and logs who revoked it and why.
Waiters take over only once the lease has expired in the store's time,
exactly as after a crash: never at once. With an outage grace (the
default: --outage-grace), as after a crash, that is when the store's
record shows the lease ended: at once where other processes renew,
else up to the grace after its expiry. The record stays in the store
(dsync status lists it) until an hour after the lease expired, when the
sweeps delete it with the session's documents.

revoke then waits until the lease has expired in store time.

Flags:
  --key K          revoke the process holding K (the head of its queue)
  --process ID     revoke the session ID (as dsync status shows it)
  --reason TEXT    why (required): kept in the store and logged by the process
  (and the global flags; see 'dsync -h')

Exit status: 0 when the lease has expired; 1 on failure (the server
cannot be reached, K is not held, or --timeout passed first); 2: usage
error.
`

var revokeCmd = &command{
	name:    "revoke",
	summary: "make a process give up its holds (within one TTL)",
	usage:   revokeUsage,
	run:     runRevoke,
}

func runRevoke(g *globals, args []string) int {
	fs := newFlagSet("revoke", g)
	key := fs.String("key", "", "")
	process := fs.String("process", "", "")
	reason := fs.String("reason", "", "")
	pos, _, code, err := parseArgs(fs, revokeUsage, args, false)
	if err != nil {
		return code
	}
	switch {
	case len(pos) > 0:
		return usageError("revoke", fmt.Errorf("unexpected argument %q", pos[0]))
	case (*key == "") == (*process == ""):
		return usageError("revoke", errors.New("give one of --key and --process"))
	case *reason == "":
		return usageError("revoke", errors.New("--reason is required"))
	}
	ctx := context.Background()
	mc, db, err := g.connect(ctx)
	if err != nil {
		if isUsage(err) {
			return fail("revoke", exitUsage, err)
		}
		return fail("revoke", exitFailure, err)
	}
	defer disconnect(mc)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, store, err := g.lockClient(db, logger, 0)
	if err != nil {
		return fail("revoke", exitFailure, err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	session := *process
	if *key != "" {
		if session, err = keyHolder(ctx, c, store, *key); err != nil {
			return fail("revoke", exitFailure, err)
		}
	}
	r := driver.Revocation{Session: session, By: revoker(), Reason: *reason}
	expired, err := revokeUntilExpired(ctx, store, r)
	if err != nil {
		return fail("revoke", exitFailure, err)
	}
	fmt.Printf("revoked session %s (by %s: %s); its lease expired at %s (store time)\n",
		session, r.By, r.Reason, expired.UTC().Format(time.RFC3339Nano))
	return exitOK
}

// keyHolder returns the session of the claim that holds key, for revoke
// --key. It prepares store for writing first: the revoke is a write aimed
// by this choice, so the claims' expiry must be judged by the clock that
// orders the writes (ServerTime), which Queue then reads (the store's
// ReadServerTime, driver.Roles.Reads, is ServerTime's once Prepare has
// succeeded), not by a read's sample (on MongoDB hello's, behind a mongos
// the router's): by a clock ahead, the holder looked expired and the
// first waiter's session was revoked instead.
func keyHolder(ctx context.Context, c *dsync.Client, store driver.Store, key string) (string, error) {
	if err := store.Prepare(ctx); err != nil {
		return "", err
	}
	q, err := statuspage.NewReader(c).Queue(ctx, key)
	if err != nil {
		return "", err
	}
	// Its holder: claims before it whose session expired hold no more
	// (Expired), and need no revoke.
	i := slices.IndexFunc(q, func(c statuspage.ClaimInfo) bool { return c.Holds })
	if i < 0 {
		return "", fmt.Errorf("%s is not held", key)
	}
	return q[i].Session, nil
}

// revokeUntilExpired revokes r.Session once (ErrExists: it was already;
// the first record stays) and waits, reading the session every second,
// until its lease has expired in store time; it returns its expiry.
func revokeUntilExpired(ctx context.Context, store driver.Store, r driver.Revocation) (time.Time, error) {
	rs := store.Roles().Revocations
	if rs == nil {
		return time.Time{}, errors.New("the store records no revocations")
	}
	// A revoke writes: the store is prepared for writing, and its time
	// is the clock it judges expiry with (ServerTime is not valid before
	// the store is prepared: by --process nothing has prepared it; by
	// --key keyHolder has, and this is cheap).
	if err := store.Prepare(ctx); err != nil {
		return time.Time{}, err
	}
	r.At = store.ServerTime().Latest
	if err := rs.Revoke(ctx, r); err != nil && !errors.Is(err, driver.ErrExists) {
		return time.Time{}, err
	}
	for {
		sess, found, err := store.GetSession(ctx, r.Session)
		if err != nil {
			return time.Time{}, err
		}
		if !found || sess.ExpiresAt.Before(store.ServerTime().Earliest) {
			return sess.ExpiresAt, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("the lease had not expired by --timeout (expiry %s, store time): %w", sess.ExpiresAt, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// revoker names who revokes: user@host.
func revoker() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
