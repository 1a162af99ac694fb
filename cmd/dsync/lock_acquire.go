//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/statuspage"
)

// acquire takes the lock as the flags say, saying so when it has to wait.
// When it does not get the lock, it returns the exit status.
//
// Only a lock held (or waited for) by another is "not acquired" (124):
// with --try, a server that cannot be reached or answers an error is a
// failure (125), with its error; a waiting dsync lock says the error and
// waits on, as LockContext retries.
func acquire(ctx context.Context, r *reporter, mu lockable, b *dsync.Client, name string, f lockFlags) (int, bool) {
	err := mu.TryLockContext(ctx)
	switch {
	case err == nil:
		r.info("acquired %s", what(mu))
		return 0, true
	case ctx.Err() != nil:
		return signalStatus(ctx), false
	case !errors.Is(err, dsync.ErrHeld) && f.try:
		return fail("lock", exitDsync, err), false
	case !errors.Is(err, dsync.ErrHeld):
		r.say("lock %q not acquired at once: %s; waiting", name, oneLine(err))
	default:
		name = busyName(mu, err, name)
		holder := describeHolder(ctx, b, name, f.n)
		if f.try {
			r.say("lock %q not acquired: %s", name, holder)
			return exitNotLocked, false
		}
		r.say("lock %q %s; waiting", name, holder)
	}
	start := time.Now()
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if f.wait > 0 {
		wctx, cancel = context.WithTimeoutCause(ctx, f.wait, errWaited)
	}
	defer cancel()
	err = mu.LockContext(wctx)
	switch {
	case err == nil:
		r.say("acquired %s after %s", what(mu), fmtDur(time.Since(start)))
		return 0, true
	case ctx.Err() != nil:
		return signalStatus(ctx), false
	case errors.Is(err, errWaited):
		r.say("%s not acquired within %v: %s", lockNames(mu, name), f.wait, describeHolders(ctx, b, mu, name, f.n))
		return exitNotLocked, false
	default:
		return fail("lock", exitDsync, err), false
	}
}

var errWaited = errors.New("waited long enough")

// describeHolder says who holds name, for a message: "held by HOST (pid
// N, token T)", with the pid of the holder's command when the holder
// runs on this machine.
func describeHolder(ctx context.Context, b *dsync.Client, name string, n int64) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if n > 1 {
		return describeUnits(ctx, b, name)
	}
	info, held, err := queueHead(ctx, b, name)
	switch {
	case err != nil:
		return "its holder cannot be read: " + oneLine(err)
	case !held:
		return "it is free now"
	}
	return formatHolder(info)
}

// queueHead returns the head of name's queue that holds: its holder, or
// the claim whose turn has just come; held is false when none does.
// Claims before it whose session expired hold no more (Expired).
func queueHead(ctx context.Context, b *dsync.Client, name string) (info statuspage.ClaimInfo, held bool, err error) {
	q, err := statuspage.NewReader(b).Queue(ctx, name)
	if err != nil {
		return statuspage.ClaimInfo{}, false, err
	}
	i := slices.IndexFunc(q, func(c statuspage.ClaimInfo) bool { return c.Holds })
	if i < 0 {
		return statuspage.ClaimInfo{}, false, nil
	}
	return q[i], true, nil
}

// formatHolder says who holds a claim: "held by HOST (pid N, token T)",
// with the pid of the holder's command when the holder runs on this
// machine.
func formatHolder(info statuspage.ClaimInfo) string {
	if host, _ := os.Hostname(); host == info.Host {
		if cmd, ok := childProcesses([]int{info.PID})[info.PID]; ok {
			return fmt.Sprintf("held by %s (pid %d, running pid %d; token %d)", info.Host, info.PID, cmd, info.Token)
		}
	}
	return fmt.Sprintf("held by %s (pid %d, token %d)", info.Host, info.PID, info.Token)
}

// describeUnits says how the units of the semaphore name are held, for a
// message: "3/3 units held (first by HOST, pid N, token T)". The claims of
// the queue that hold by the grant rule (or are about to) count.
func describeUnits(ctx context.Context, b *dsync.Client, name string) string {
	q, err := statuspage.NewReader(b).Queue(ctx, statuspage.NamespacedKey("sem", name))
	switch {
	case err != nil:
		return "its holders cannot be read: " + oneLine(err)
	case len(q) == 0:
		return "it is free now"
	}
	first := slices.IndexFunc(q, func(c statuspage.ClaimInfo) bool { return c.Holds })
	if first < 0 {
		return "it is free now"
	}
	limit, held := q[first].Limit, int64(0)
	for _, c := range q {
		if c.Holds {
			held += c.Weight
		}
	}
	return fmt.Sprintf("%d/%d units held (first by %s, pid %d, token %d)", held, limit, q[first].Host, q[first].PID, q[first].Token)
}

// unlock releases the hold, bounded by the TTL; a lost hold needs no
// release, and a failed one just expires.
func unlock(r *reporter, mu lockable, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), ttl)
	defer cancel()
	if err := mu.UnlockContext(ctx); err != nil && !errors.Is(err, dsync.ErrLost) {
		r.say("releasing lock %q failed; it expires within %v: %v", mu.Key(), ttl, oneLine(err))
	}
}
