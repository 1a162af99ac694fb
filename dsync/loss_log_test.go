package dsync_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// A store that dies or hangs under a holder leaves a trace at Warn: the
// loss of each hold, naming why no renewal was confirmed, and the failed
// renewal, once, even when it was cut short by the session's deadline
// (a store that hangs answers nothing before the deadline retires the
// session). Two Mutexes share the lease: the renewal is one line, the
// losses one per hold. Logged with a level below Warn, the same lines
// would not be seen by an operator who keeps the default level. With an
// outage grace (the default) a session is suspended at its deadline, not
// retired: a renewal of a hung store is not cut short there, so its line
// may come later; the loss names the renewal that had no reply.
func TestLossLoggedAtWarn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace bool
		fault func(c *dsync.MemClient)
		// what the loss and the renewal say of the cause
		loss, renewal string
	}{
		{"refused", false, func(c *dsync.MemClient) { c.SetReachable(false) }, "the last renewal that answered failed: dsync: renew session: memory: the store is unreachable", "memory: the store is unreachable"},
		{"hung", false, func(c *dsync.MemClient) { c.SetAnswering(false) }, "had no reply", "no reply within"},
		{"refused with a grace", true, func(c *dsync.MemClient) { c.SetReachable(false) }, "the last renewal that answered failed: dsync: renew session: memory: the store is unreachable", "memory: the store is unreachable"},
		{"hung with a grace", true, func(c *dsync.MemClient) { c.SetAnswering(false) }, "had no reply", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logged logBuffer
				opts := []dsync.ClientOption{dsync.ClientWithTTL(3 * time.Second), dsync.ClientWithLogger(slog.New(slog.NewTextHandler(&logged, nil)))}
				if !tc.grace {
					opts = append(opts, dsync.ClientWithOutageGrace(0))
				}
				c := dsync.NewMemClient(opts...)
				defer c.Close()
				ms := []*dsync.Mutex{newMutexLogged(t, c.Client, "a"), newMutexLogged(t, c.Client, "b")}
				for _, m := range ms {
					m.Lock()
				}
				tc.fault(c)
				for _, m := range ms {
					<-m.Lost()
				}
				synctest.Wait() // the losses, and a renewal cut short, are reported after Lost closes
				t.Log(logged.String())
				var losses, renewals []string
				for line := range strings.Lines(logged.String()) {
					switch {
					case strings.Contains(line, "hold lost"):
						losses = append(losses, line)
					case strings.Contains(line, "renew session"):
						renewals = append(renewals, line)
					}
				}
				for _, l := range losses {
					if !strings.Contains(l, "level=WARN") || !strings.Contains(l, tc.loss) {
						t.Errorf("a loss logged as %q; want it at Warn, saying %q", l, tc.loss)
					}
				}
				if len(losses) != len(ms) {
					t.Errorf("%d losses logged, want one per hold (%d):\n%s", len(losses), len(ms), logged.String())
				}
				if tc.renewal == "" && len(renewals) == 0 {
					// not cut short: see above
				} else if len(renewals) != 1 || !strings.Contains(renewals[0], "level=WARN") || !strings.Contains(renewals[0], tc.renewal) ||
					strings.Count(renewals[0], "renew session") != 1 {
					t.Errorf("renewal failures logged:\n%s\nwant one line at Warn, saying %q", strings.Join(renewals, ""), tc.renewal)
				}
				c.SetReachable(true)
				c.SetAnswering(true)
				for _, m := range ms {
					if err := m.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
						t.Errorf("UnlockContext = %v, want ErrLost", err)
					}
				}
			})
		})
	}
}

// Close ends the holds it finds: the program ended them, so their loss is
// logged at Info, not Warn, and no renewal is reported failed.
func TestLossToCloseLoggedAtInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged logBuffer
		c := dsync.NewMemClient(dsync.ClientWithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
		m := newMutexLogged(t, c.Client, "a")
		m.Lock()
		time.Sleep(c.RenewInterval()) // a renewal goes out, and may be out at Close
		c.Close()
		<-m.Lost()
		synctest.Wait()
		for line := range strings.Lines(logged.String()) {
			if strings.Contains(line, "level=WARN") {
				t.Errorf("logged at Warn on Close: %s", line)
			}
		}
		if !strings.Contains(logged.String(), "hold lost") {
			t.Errorf("log:\n%s\nwant the loss at Info", logged.String())
		}
	})
}

// newMutexLogged is newMutex with the Client's logger, not the tests'
// quiet one.
func newMutexLogged(t *testing.T, c *dsync.Client, key string) *dsync.Mutex {
	t.Helper()
	m, err := dsync.NewMutex(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
