//go:build unix

package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/faultproxy"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestAcquireTellsAStoreErrorFromAHeldLock: a store that does not answer
// the first attempt is no lock held by someone. dsync lock --try exits
// 125 with the store's error, not 124 (the lock held, which
// TestLockTryAndWaitGiveUpWhenHeld checks); a waiting dsync lock says the
// error and waits on, and gets the lock once the store answers.
func TestAcquireTellsAStoreErrorFromAHeldLock(t *testing.T) {
	t.Parallel()
	server, err := url.Parse(mongotest.Shared(t).URI())
	if err != nil {
		t.Fatal(err)
	}
	db := mongotest.DatabaseName(t)
	// From the first write on (the first attempt's, or the server-time
	// sample before it), requests reach the server 5 s late, for 10 s:
	// longer than the attempt's bound (2 s, the default try timeout). A
	// proxy each, so that the second starts with none stalled.
	const stall, delay = 10 * time.Second, 5 * time.Second
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"--try"}, exitDsync, ""},
		{nil, 0, "ran\n"},
	} {
		px, err := faultproxy.New(server.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		u := *server
		u.Host = px.Addr()
		q := u.Query()
		q.Set("directConnection", "true")
		u.RawQuery = q.Encode()
		px.StallNextWrite(stall, delay)
		args := append(append([]string{"--db", db, "lock", "stalled"}, c.args...), "--", "echo", "ran")
		r := runDsync(t, env(u.String()), "", slow(time.Minute), args...)
		// The store's error: the try's bound passed, or a request of
		// the attempt timed out first.
		storeErr := strings.Contains(r.stderr, "did not answer") || strings.Contains(r.stderr, "timeout") || strings.Contains(r.stderr, "timed out")
		holder := strings.Contains(r.stderr, "held by") || strings.Contains(r.stderr, "holder") || strings.Contains(r.stderr, "free now")
		if r.code != c.code || r.stdout != c.stdout || !storeErr || holder {
			t.Errorf("dsync %s, the store stalled: exit %d, stdout %q; want %d, %q and the store's error on stderr, no holder's\nstderr: %s",
				strings.Join(args, " "), r.code, r.stdout, c.code, c.stdout, r.stderr)
		}
	}
}
