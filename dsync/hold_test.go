package dsync

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestHoldIsNotRenewedBeforeItStarts: a hold joins its keeper before its
// acquire reply is judged (start). If that reply came too late, acquire
// releases the epoch; a renewal of the same epoch in flight at that moment
// could undo the release on FerretDB. So the keeper must not pick up a
// hold that has not started, nor one whose start failed.
func TestHoldIsNotRenewedBeforeItStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := NewMutex(NewMemoryBackend(), "k", WithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		h := &hold{m: m, lease: Lease{Key: "k", Owner: m.owner, Token: 1}, lost: make(chan struct{})}
		join(h, time.Now())
		defer h.keeper.remove(h)
		if h.active() {
			t.Error("a hold that has not started is renewed")
		}
		if h.start(time.Now().Add(-time.Second)) {
			t.Fatal("start accepted a reply that came after the deadline")
		}
		if h.active() {
			t.Error("a hold whose start failed is renewed")
		}
		if !h.start(time.Now()) || !h.active() {
			t.Error("a hold that started in time is not renewed")
		}
	})
}
