package worker

import (
	"bufio"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
)

func testRecorder(t *testing.T, ttl time.Duration) (*recorder, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.jsonl")
	hw, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hw.Close() })
	w := &worker{cfg: Config{Name: "t"}, pid: 1, hist: hw, out: bufio.NewWriter(io.Discard)}
	return &recorder{w: w, ttl: int64(ttl), margin: int64(ttl / 20), dl: make(map[leaseID]int64)}, path
}

// The recorder applies dsync's rule: send time + TTL − TTL/20, from the
// last acquire or renewal confirmed before the deadline in force.
func TestRecorderPredictsDeadlines(t *testing.T) {
	const ttl = 1000
	r, path := testRecorder(t, ttl)
	l := dsync.Lease{Key: "k", Token: 7}

	r.acquired(l, 100, 200)
	if got := r.deadline("k", 7); got != 1050 {
		t.Fatalf("after acquire: %d, want 1050", got)
	}
	r.renewed([]dsync.Lease{l}, []bool{true}, 400, 450)
	if got := r.deadline("k", 7); got != 1350 {
		t.Fatalf("after a renewal in time: %d, want 1350", got)
	}
	r.renewed([]dsync.Lease{l}, []bool{true}, 700, 1400) // reply after 1350
	if got := r.deadline("k", 7); got != 1350 {
		t.Fatalf("a late reply counted: %d, want 1350", got)
	}
	r.renewed([]dsync.Lease{l}, []bool{false}, 800, 900) // refused
	if got := r.deadline("k", 7); got != 1350 {
		t.Fatalf("a refused renewal counted: %d", got)
	}
	r.acquired(dsync.Lease{Key: "k", Token: 8}, 2000, 3000) // too late to count
	if got := r.deadline("k", 8); got != 0 {
		t.Fatalf("a late acquire counted: %d", got)
	}

	evs, _, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].DL != 1050 || evs[1].DL != 1350 || evs[1].Src != history.SrcPred {
		t.Fatalf("recorded %+v", evs)
	}
}

// The recording wrapper keeps the backend's optional Waiter, so the Mutex
// still waits the way the backend wants.
func TestRecordLocksKeepsWaiter(t *testing.T) {
	r, _ := testRecorder(t, time.Second)
	if _, ok := recordLocks(dsync.NewMemoryBackend(), r).(dsync.Waiter); !ok {
		t.Error("the memory backend's Waiter was lost by the wrapper")
	}
	type plain struct{ dsync.Backend }
	if _, ok := recordLocks(plain{dsync.NewMemoryBackend()}, r).(dsync.Waiter); ok {
		t.Error("the wrapper claims a Waiter the backend does not have")
	}
}
