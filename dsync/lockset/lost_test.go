package lockset_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// A member whose work reports no progress stalls: the Set's Lost, taken
// while it held, closes, and Err names that member and wraps
// dsync.ErrStalled; UnlockContext returns dsync.ErrLost. The member's
// progress deadline starts at the Set's return: while the Set waits for a
// later member longer than the deadline, the earlier member, held, does
// not stall (the Set returns with the very hold it waited with).
func TestLostNamesTheMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := client(t, store), client(t, store)
		const deadline = time.Second
		first := mutex(t, a, "l0", dsync.WithProgressDeadline(deadline))
		s := newSet(t, a, lockset.Mutex(mutex(t, a, "l1")), lockset.Mutex(first))
		blocker := mutex(t, b, "l1")
		blocker.Lock()
		done := make(chan error, 1)
		go func() { done <- s.LockContext(context.Background()) }()
		synctest.Wait()
		waitedWith := first.Token() // held, and installed in its Mutex
		if waitedWith == 0 {
			t.Fatal("the Set waits at l1 without holding l0")
		}
		time.Sleep(5 * deadline)
		blocker.Unlock()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		returned := time.Now()
		if got := s.Tokens()[1]; got != waitedWith {
			t.Errorf("l0's token at the return is %d, the one it waited with %d: it was lost while the Set waited", got, waitedWith)
		}
		if vu := s.ValidUntil(); vu.After(returned.Add(deadline)) {
			t.Errorf("ValidUntil %v after the progress deadline %v", vu.Sub(returned), deadline)
		}
		lost := s.Lost()
		select {
		case <-lost:
			t.Fatal("Lost closed at the return")
		default:
		}
		if err := s.Err(); err != nil {
			t.Fatalf("Err = %v before any loss", err)
		}
		time.Sleep(deadline)
		synctest.Wait()
		select {
		case <-lost:
		default:
			t.Fatal("Lost did not close when l0 stalled")
		}
		err := s.Err()
		if !errors.Is(err, dsync.ErrStalled) || !strings.Contains(err.Error(), `"l0"`) {
			t.Errorf("Err = %v, want one that names l0 and wraps dsync.ErrStalled", err)
		}
		if err := s.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Errorf("UnlockContext = %v, want dsync.ErrLost", err)
		}
		if err := s.Err(); !errors.Is(err, dsync.ErrStalled) {
			t.Errorf("Err after Unlock = %v, want the loss", err)
		}
	})
}

// A Set whose process is cut off from the store loses every member at its
// session's deadline: Lost closes, and Err wraps dsync.ErrLost.
func TestLostWhenCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		p := store.Process()
		a := client(t, p, dsync.ClientWithTTL(time.Second))
		s := newSet(t, a, lockset.Mutex(mutex(t, a, "x")), lockset.Mutex(mutex(t, a, "y")))
		mustLock(t, s)
		lost := s.Lost()
		p.SetReachable(false)
		select {
		case <-lost:
		case <-time.After(time.Minute):
			t.Fatal("Lost did not close within a minute of the cut")
		}
		if err := s.Err(); !errors.Is(err, dsync.ErrLost) {
			t.Errorf("Err = %v, want dsync.ErrLost", err)
		}
		s.Unlock()
		p.SetReachable(true)
	})
}

// A member lost while the Set waits for a later one (its session expired
// while the process was cut off) makes the Set start again: LockContext
// returns holding every member validly, the lost one by a new hold.
func TestLostWhileWaitingRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		p := store.Process()
		a, b := client(t, p, dsync.ClientWithTTL(time.Second)), client(t, store)
		first := mutex(t, a, "r0")
		s := newSet(t, a, lockset.Mutex(mutex(t, a, "r1")), lockset.Mutex(first))
		blocker := mutex(t, b, "r1")
		blocker.Lock()
		done := make(chan error, 1)
		go func() { done <- s.LockContext(context.Background()) }()
		synctest.Wait()
		waitedWith := first.Token()
		lost := first.Lost()
		p.SetReachable(false)
		<-lost // r0's session ran out while the Set waited at r1
		time.Sleep(5 * time.Second)
		p.SetReachable(true)
		time.Sleep(5 * time.Second)
		blocker.Unlock()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.Lost():
			t.Fatalf("the Set returned with a lost member: %v", s.Err())
		default:
		}
		if got := s.Tokens()[1]; got <= waitedWith {
			t.Errorf("r0's token %d, not above the lost hold's %d", got, waitedWith)
		}
		s.Unlock()
	})
}
