package worker

import (
	"bufio"
	"path/filepath"
	"testing"

	"github.com/go-dsync/dsync/integration/history"
)

// blockingWriter blocks every Write after the first until release is
// closed, and says when one is blocked.
type blockingWriter struct {
	blocked chan struct{}
	release chan struct{}
	writes  int
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.writes++
	if b.writes > 1 {
		close(b.blocked)
		<-b.release
	}
	return len(p), nil
}

// The recorder writes its events without holding its lock: a write that
// blocks (a full stdout pipe, a slow disk) must not hold up a hold's end
// reading its deadline, nor the library reading the server's time
// (readServerTime), which it may do under the lock its deadline timer
// takes to signal a loss.
func TestRecorderWritesOutsideItsLock(t *testing.T) {
	const ttl = 1000
	hw, err := history.Create(filepath.Join(t.TempDir(), "h.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hw.Close() })
	out := &blockingWriter{blocked: make(chan struct{}), release: make(chan struct{})}
	w := &worker{cfg: Config{Name: "t"}, pid: 1, hist: hw, out: bufio.NewWriter(out)}
	r := newRecorder(w, ttl)
	r.claimed("k", 7, "s1", "a")
	r.opened("s1", 100, 200)
	r.holding("k", 7, 300) // its deadline event is the first write

	done := make(chan struct{})
	go func() {
		defer close(done)
		r.renewed("s1", 400, 450) // its deadline event blocks
	}()
	<-out.blocked
	locked := r.mu.TryLock()
	if locked {
		r.mu.Unlock()
	}
	close(out.release)
	<-done
	if !locked {
		t.Fatal("the recorder held its lock while its write was blocked")
	}
	if got := r.deadline("k", 7); got != 400+ttl-ttl/20 {
		t.Fatalf("deadline after the renewal %d, want %d", got, 400+ttl-ttl/20)
	}
}
