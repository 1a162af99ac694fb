package lockset_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// panicOf returns what f panics with, "" if it returns.
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// Misuse panics, as it does with sync's types: an Unlock of an unlocked
// Set, a Set copied or not made by New, a zero Member, and a Set's Unlock
// after one of its members was unlocked directly.
func TestMisusePanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := client(t, memory.New())
		m := mutex(t, a, "p0")
		rw := rwmutex(t, a, "p1")
		s := newSet(t, a, lockset.Mutex(m), lockset.Read(rw))
		copied := new(lockset.Set) // of a Set of its own: a copy that works must not block the cases below
		reflect.ValueOf(copied).Elem().Set(reflect.ValueOf(newSet(t, a, lockset.Mutex(mutex(t, a, "p2")))).Elem())
		var zero lockset.Set
		for _, c := range []struct {
			name, want string
			f          func()
		}{
			{"Unlock of an unlocked Set", "unlock of unlocked Set", s.Unlock},
			{"a copied Set", "Set copied", func() { copied.TryLock() }},
			{"a zero Set", "Set used without New", func() { zero.TryLock() }},
			{"a zero Member", "zero Member", func() { _, _ = lockset.New(a, []lockset.Member{{}}) }},
			{"a nil Mutex", "used without NewMutex", func() { lockset.Mutex(nil) }},
		} {
			if got := panicOf(c.f); !strings.Contains(got, c.want) {
				t.Errorf("%s: panic %q, want one with %q", c.name, got, c.want)
			}
		}
		for name, direct := range map[string]func(){"Mutex": m.Unlock, "RWMutex read": rw.RUnlock} {
			mustLock(t, s)
			direct()
			if got := panicOf(s.Unlock); !strings.Contains(got, "unlocked outside its set") {
				t.Errorf("Unlock after its %s member was unlocked directly: panic %q", name, got)
			}
			mustLock(t, s) // the Set was unlocked in full all the same
			s.Unlock()
		}
	})
}

// New refuses a nil Client, no members, a member of another Client, and
// two members of one stored key, naming them.
func TestNewRefusesBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := client(t, store), client(t, store)
		rw := rwmutex(t, a, "acct/3")
		m7 := lockset.Mutex(mutex(t, a, "acct/7"))
		for _, c := range []struct {
			name    string
			client  *dsync.Client
			members []lockset.Member
			is      error
			text    string
		}{
			{"nil Client", nil, []lockset.Member{m7}, dsync.ErrNilClient, ""},
			{"no members", a, nil, lockset.ErrNoMembers, ""},
			{"another Client's", a, []lockset.Member{m7, lockset.Mutex(mutex(t, b, "acct/9"))}, lockset.ErrOtherClient, `member 1 (Mutex "acct/9")`},
			{"a key twice", a, []lockset.Member{m7, lockset.Read(rw), lockset.Mutex(mutex(t, a, "acct/7"))}, lockset.ErrTwice, `"acct/7" (members 0 and 2)`},
			{"an RWMutex twice", a, []lockset.Member{lockset.Write(rw), m7, lockset.Read(rw)}, lockset.ErrTwice, `"acct/3" (members 0 and 2)`},
		} {
			s, err := lockset.New(c.client, c.members)
			if s != nil || !errors.Is(err, c.is) || !strings.Contains(fmt.Sprint(err), c.text) {
				t.Errorf("%s: New = %v, %v; want %v naming %s", c.name, s, err, c.is, c.text)
			}
		}
		// A Mutex and an RWMutex of one name are two keys, as in dsync.
		if _, err := lockset.New(a, []lockset.Member{m7, lockset.Write(rwmutex(t, a, "acct/7"))}); err != nil {
			t.Errorf("a Mutex and an RWMutex of one name: %v", err)
		}
	})
}

// A Set is a sync.Locker, as the package doc says.
var _ sync.Locker = (*lockset.Set)(nil)

// One Lock of a Set at a time holds it in a process, as with a
// sync.Mutex: while it is held, another LockContext waits (here until its
// ctx ends), and a Try meets a *dsync.HeldError naming the first member
// in the set's order; once unlocked, any goroutine locks it.
func TestOneLockOfASetAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := client(t, memory.New())
		s := newSet(t, a, lockset.Read(rwmutex(t, a, "o1")), lockset.Read(rwmutex(t, a, "o0")))
		mustLock(t, s)
		if err := s.TryLockContext(context.Background()); heldErrorKey(err) != "o0" {
			t.Errorf("TryLockContext of a held Set = %v, want a *dsync.HeldError of o0", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("LockContext of a held Set = %v, want it to wait until ctx ends", err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Unlock()
		}()
		<-done
		mustLock(t, s)
		s.Unlock()
	})
}
