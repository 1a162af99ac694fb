package dsync_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestOutageRelockBesideFreshSession: another process tries to open a
// session in an outage of the whole store in which requests land when it
// ends (a server stopped by SIGSTOP), and gives up; its open lands at the
// store's return, and that session document is never written again. The
// holder's re-lock must get its hold back: the document was inserted
// marked as a record-keeper's (driver.UptimeStore.InsertSessionUp), so no
// resume check waits on it. Before, an engine marked a document by
// renewing it after its insert, and this one, never renewed, held up
// every resume check (queue's Suspension.Check: ResumeWait) until the
// record proved the holder dead a TTL after the store's return: the
// re-lock failed although the outage, shorter than the grace, had not
// ended the hold (found by the public-API simulation's outages,
// integration/apisim).
func TestOutageRelockBesideFreshSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(3, outGrace)
		defer w.close()
		// The other process has read the store's clock and ended its
		// first session before the outage.
		warm := newMutex(t, w.clients[2].Client, "warm")
		warm.Lock()
		if warm.Token() == 0 {
			t.Fatal("the other process's first Lock returned without a token")
		}
		warm.Unlock()
		time.Sleep(3 * outTTL)
		a := newMutex(t, w.clients[0].Client, "k")
		a.Lock()
		tok := a.Token()
		time.Sleep(outTTL / 2)
		synctest.Wait()

		w.hang(true)
		// Another process tries to open a session (its first Lock) in
		// the outage, and gives up; the open lands when the store is
		// back, and nobody renews that document.
		octx, ocancel := context.WithTimeout(context.Background(), outTTL)
		defer ocancel()
		other := locker(octx, newMutex(t, w.clients[2].Client, "other"))
		waitLost(t, a, outTTL)
		ctx, cancel := context.WithTimeout(context.Background(), 6*outTTL)
		defer cancel()
		relock := locker(ctx, a)
		time.Sleep(3 * outTTL)
		synctest.Wait()
		if err, ok := lockedBy(other); !ok || err == nil {
			t.Fatalf("the other Lock in the outage: %v, %v; want it given up", err, ok)
		}
		w.hang(false)
		synctest.Wait()
		up, _ := w.store.Roles().Uptime.ReadUptime(context.Background(), time.Time{})
		t.Logf("after the return: %d spans, unmarked %v", len(up.Spans), up.Unmarked)
		select {
		case err := <-relock:
			if err != nil {
				t.Fatalf("LockContext after an outage of three TTLs (grace %v) = %v; want the hold back", outGrace, err)
			}
		case <-time.After(2 * outTTL):
			t.Fatal("LockContext still waiting two TTLs after the store came back")
		}
		if got := a.Token(); got != tok {
			t.Errorf("the token after the re-lock = %d; want %d, the same", got, tok)
		}
	})
}
