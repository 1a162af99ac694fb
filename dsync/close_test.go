package dsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestCloseEndsEverything: Close of a Client loses its holds (Lost
// closes), releases them so that another process takes the key at once,
// not after the TTL, makes its waiting Locks return ErrClosed, and
// refuses new ones.
func TestCloseEndsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, err := dsync.NewClient(store, dsync.ClientWithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		b := newClient(t, store, dsync.ClientWithTTL(time.Minute))
		held := newMutex(t, a, "k")
		held.Lock()
		lost := held.Lost()

		blocker := newMutex(t, b, "j")
		blocker.Lock()
		waiting := newMutex(t, a, "j")
		waited := make(chan error, 1)
		go func() { waited <- waiting.LockContext(context.Background()) }()

		other := newMutex(t, b, "k")
		took := make(chan time.Time, 1)
		go func() {
			other.Lock()
			took <- time.Now()
		}()
		time.Sleep(time.Second)
		closed := time.Now()
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lost:
		default:
			t.Error("Lost still open after Close")
		}
		if err := <-waited; !errors.Is(err, dsync.ErrClosed) {
			t.Errorf("a Lock waiting on the closed Client returned %v, want ErrClosed", err)
		}
		if at := <-took; at.Sub(closed) > time.Second {
			t.Errorf("another process took the key %v after Close, want at once (TTL 1m)", at.Sub(closed))
		}
		if err := held.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Errorf("Unlock after Close = %v, want ErrLost", err)
		}
		late := newMutex(t, a, "n")
		if err := late.LockContext(context.Background()); !errors.Is(err, dsync.ErrClosed) {
			t.Errorf("Lock on a closed Client = %v, want ErrClosed", err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("a second Close = %v", err)
		}
		other.Unlock()
		blocker.Unlock()
	})
}
