package dsync_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// A stall is recorded in the store once its claim was released: one
// record (statuspage.Reader.Stalls), which names the claim (key, token, owner) and
// says when the hold began and when its work last reported progress, in
// the store's time.
func TestStallRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		store := memory.New()
		c := dsync.NewMemClientOn(store, dsync.ClientWithTTL(progressTTL))
		defer c.Close()
		m := newProgressMutex(t, c.Client, "k", dsync.WithProgressDeadline(d))
		m.Lock()
		began := store.ServerTime().Latest
		token := m.Token()
		time.Sleep(d / 2)
		m.Progress()
		last := store.ServerTime().Latest
		if stalls, err := statuspage.NewReader(c.Client).Stalls(t.Context()); err != nil || len(stalls) != 0 {
			t.Fatalf("Stalls before any stall: %v, %v; want none", stalls, err)
		}
		await(t, "Lost", m.Lost())
		time.Sleep(driver.Margin(progressTTL)) // the release, then the record
		synctest.Wait()
		stalls, err := statuspage.NewReader(c.Client).Stalls(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(stalls) != 1 {
			t.Fatalf("Stalls: %+v; want one record", stalls)
		}
		s := stalls[0]
		if s.Key != "k" || s.Token != token || s.Owner != dsync.Owner(m) {
			t.Errorf("recorded %+v; want key k, token %d, owner %s", s, token, dsync.Owner(m))
		}
		near := func(a, b time.Time) bool { return a.Sub(b).Abs() <= time.Millisecond }
		if !near(s.Since, began) || !near(s.LastProgress, last) {
			t.Errorf("recorded Since %v, LastProgress %v; want %v, %v", s.Since, s.LastProgress, began, last)
		}
		wantStalled(t, "UnlockContext", m.UnlockContext(t.Context()))
	})
}
