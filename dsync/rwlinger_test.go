package dsync

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// The read claims that outlive RUnlock (rwlinger.go), where turned on.

// hearingWaiters are the two ways a process hears that a writer waits,
// where a read claim may linger: the store's live stream, and direct
// hints (each call, a network of its own).
var hearingWaiters = []struct {
	name string
	opts func() []ClientOption
}{
	{"StoreFeed", func() []ClientOption { return nil }},
	{"Hints", func() []ClientOption { return []ClientOption{(&hintNet{}).member()} }},
}

// lingerRW returns an RWMutex of key k on c with its read linger turned
// on (it is off by default): the renew interval, unless opts say
// otherwise.
func lingerRW(t *testing.T, c *Client, opts ...Option) *RWMutex {
	t.Helper()
	rw, err := NewRWMutex(c, "k", append([]Option{WithReadLinger(c.RenewInterval())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

// readOnce takes and releases a read hold of rw for the read claim it
// leaves lingering; nothing is done under it.
func readOnce(rw *RWMutex) {
	rw.RLock()
	//lint:ignore SA2001 the hold is taken for the claim it leaves in the store, not to wait out another goroutine's.
	rw.RUnlock()
}

// sent returns what cc counted since before, by method, without zeros.
func sent(cc *callCounter, before map[string]int) map[string]int {
	d := make(map[string]int)
	for k, n := range cc.snapshot() {
		if n -= before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// TestRLockAfterRUnlockSendsNothing: an RLock within the linger of the
// last RUnlock holds the same claim again, with no request, and the
// same token; the store shows the claim meanwhile. Without the linger,
// each RLock is a claim (an insert and its reads) and each RUnlock an end.
func TestRLockAfterRUnlockSendsNothing(t *testing.T) {
	for _, tc := range hearingWaiters {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cc := &callCounter{}
				c := NewMemClientOn(memory.New(), append(tc.opts(), countingCalls(cc))...)
				defer c.Close()
				rw := lingerRW(t, c.Client)
				rw.RLock()
				first := rw.Token()
				rw.RUnlock()
				if _, ok := c.Holder("dsync:rw/k"); !ok {
					t.Error("the store shows no claim during the linger")
				}
				synctest.Wait() // the key's put in the directory, after its first claim
				before := cc.snapshot()
				for range 10 {
					rw.RLock()
					if tok := rw.Token(); tok != first {
						t.Errorf("an RLock within the linger holds token %d, want %d (the lingering claim's)", tok, first)
					}
					rw.RUnlock()
				}
				if d := sent(cc, before); len(d) != 0 {
					t.Errorf("10 RLock+RUnlock within the linger sent %v, want nothing", d)
				}
			})
		})
	}
}

// TestLingerEndsAfterItsTime: with nothing taking it again, the
// lingering claim ends once the linger passes.
func TestLingerEndsAfterItsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewMemClientOn(memory.New())
		defer c.Close()
		rw := lingerRW(t, c.Client, WithReadLinger(time.Second))
		readOnce(rw)
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if h, ok := c.Holder("dsync:rw/k"); ok {
			t.Errorf("the claim %v is still in the store after the linger", h)
		}
	})
}

// TestNoLingerWithoutHearingWaiters: a process that cannot hear that a
// writer waits (no wake-ups, no hints), or whose RWMutex turns the
// linger off, releases the claim at RUnlock, as before the linger: the
// store shows no reader, and the next RLock claims anew.
func TestNoLingerWithoutHearingWaiters(t *testing.T) {
	for _, tc := range []struct {
		name string
		copt []ClientOption
		kopt []Option
	}{
		{"NoWakeups", []ClientOption{ClientWithWakeups(false)}, nil},
		{"LingerOff", nil, []Option{WithReadLinger(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cc := &callCounter{}
				c := NewMemClientOn(memory.New(), append(tc.copt, countingCalls(cc))...)
				defer c.Close()
				rw := lingerRW(t, c.Client, tc.kopt...)
				rw.RLock()
				first := rw.Token()
				rw.RUnlock()
				if h, ok := c.Holder("dsync:rw/k"); ok {
					t.Errorf("the store shows %v after RUnlock, want no claim", h)
				}
				synctest.Wait()
				before := cc.snapshot()
				rw.RLock()
				if tok := rw.Token(); tok == first {
					t.Errorf("the next RLock holds token %d again, want a claim of its own", tok)
				}
				rw.RUnlock()
				if d := sent(cc, before); d["Insert"]+d["InsertOrdered"]+d["InsertEach"] == 0 {
					t.Errorf("the next RLock+RUnlock sent %v, want a claim and its end", d)
				}
			})
		})
	}
}

// TestWriterBehindLingerHoldsAtOnce: a writer of another process that
// queues behind a lingering read claim holds as soon as its announcement
// reaches the owner, not after the linger (5 s at the default TTL), over
// the store's feed and over direct hints; so does a writer of the
// owner's own process (another RWMutex value, woken directly), and the
// owner's own RWMutex, which ends its claim before it claims.
func TestWriterBehindLingerHoldsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writer func(t *testing.T, store *memory.Store, owner *MemClient, net *hintNet) *RWMutex
		hints  bool
	}{
		{"OtherProcessStoreFeed", func(t *testing.T, store *memory.Store, _ *MemClient, _ *hintNet) *RWMutex {
			c := NewMemClientOn(store)
			t.Cleanup(func() { _ = c.Close() })
			return lingerRW(t, c.Client)
		}, false},
		{"OtherProcessHints", func(t *testing.T, store *memory.Store, _ *MemClient, net *hintNet) *RWMutex {
			c := NewMemClientOn(store, net.member())
			t.Cleanup(func() { _ = c.Close() })
			return lingerRW(t, c.Client)
		}, true},
		{"SameProcess", func(t *testing.T, _ *memory.Store, owner *MemClient, _ *hintNet) *RWMutex {
			return lingerRW(t, owner.Client)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store, net := memory.New(), &hintNet{}
				var opts []ClientOption
				if tc.hints {
					opts = append(opts, net.member())
				}
				owner := NewMemClientOn(store, opts...)
				defer owner.Close()
				reader := lingerRW(t, owner.Client)
				readOnce(reader)
				w := tc.writer(t, store, owner, net)
				start := time.Now()
				w.Lock()
				if d := time.Since(start); d >= time.Second {
					t.Errorf("the writer held %v after it called Lock, want at once (the linger is 5 s)", d)
				}
				w.Unlock()
			})
		})
	}
	t.Run("OwnRWMutex", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := NewMemClientOn(memory.New())
			defer c.Close()
			rw := lingerRW(t, c.Client)
			readOnce(rw)
			if !rw.TryLock() {
				t.Fatal("TryLock failed behind the RWMutex's own lingering read claim")
			}
			rw.Unlock()
		})
	})
}

// TestLeaseLostDuringLinger: a lingering claim whose session was lost
// is never taken again: the next RLock claims anew, with a token of its
// own. Over hints, the linger outlives the unreachable store (hints do
// not go through it); over the store's feed, the feed's fall ends it.
func TestLeaseLostDuringLinger(t *testing.T) {
	for _, tc := range hearingWaiters {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// A renew interval near the TTL lets the lease run out
				// within a linger: RUnlock at 850 ms, the linger until
				// 1750 ms, the renewal at 900 ms fails, and the session's
				// local deadline passes at 950 ms.
				lease := []ClientOption{ClientWithTTL(time.Second), ClientWithRenewInterval(900 * time.Millisecond)}
				c := NewMemClientOn(memory.New(), append(tc.opts(), lease...)...)
				defer c.Close()
				rw := lingerRW(t, c.Client)
				rw.RLock()
				first := rw.Token()
				time.Sleep(850 * time.Millisecond)
				rw.RUnlock()
				c.SetReachable(false)
				time.Sleep(350 * time.Millisecond)
				synctest.Wait()
				c.SetReachable(true)
				rw.RLock()
				defer rw.RUnlock()
				if tok := rw.Token(); tok == first {
					t.Fatalf("the RLock after the lease was lost holds the lost claim's token %d", tok)
				}
				select {
				case <-rw.Lost():
					t.Fatal("the new read hold is lost")
				default:
				}
			})
		})
	}
}

// TestHeardWriterEndsTheClaimAtRUnlock: while an RLock holds the
// lingering claim again, a writer of another process queues behind it.
// RLocks made from then on do not take that claim: one made while it is
// held claims anew and queues behind the writer, one made after its
// RUnlock too; the claim ends at that RUnlock (the writer holds then).
func TestHeardWriterEndsTheClaimAtRUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := NewMemClientOn(store)
		defer a.Close()
		b := NewMemClientOn(store)
		defer b.Close()
		rw := lingerRW(t, a.Client)
		rw.RLock()
		lingering := rw.Token()
		rw.RUnlock()
		rw.RLock() // holds the lingering claim again

		w := lingerRW(t, b.Client)
		writer := make(chan uint64, 1)
		release := make(chan struct{})
		go func() {
			w.Lock()
			writer <- w.Token()
			<-release
			w.Unlock()
		}()
		synctest.Wait() // the writer waits, and a heard it
		meanwhile := make(chan uint64, 1)
		go func() {
			rw.RLock()
			meanwhile <- rw.Token()
		}()
		synctest.Wait()
		select {
		case tok := <-meanwhile:
			t.Fatalf("an RLock made while a writer waited held (token %d) before the writer", tok)
		default:
		}
		rw.RUnlock() // the lingering claim's RLock: the claim ends
		var wt uint64
		select {
		case wt = <-writer:
		case <-time.After(time.Second):
			t.Fatal("the writer does not hold a second after the heard claim's RUnlock (it waited for a linger)")
		}
		if wt <= lingering {
			t.Fatalf("writer's token %d not above the lingering claim's %d", wt, lingering)
		}
		after := make(chan uint64, 1)
		go func() {
			rw.RLock()
			after <- rw.Token()
		}()
		synctest.Wait()
		select {
		case tok := <-after:
			t.Fatalf("an RLock after the heard claim's RUnlock held (token %d) while the writer holds", tok)
		default:
		}
		close(release)
		for _, c := range []chan uint64{meanwhile, after} {
			if tok := <-c; tok <= wt {
				t.Errorf("a read hold after the writer has token %d, not above the writer's %d", tok, wt)
			}
		}
		rw.RUnlock()
		rw.RUnlock()
	})
}

// TestReadLingerOption: WithReadLinger is at least 0 and at most the
// renew interval.
func TestReadLingerOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewMemClientOn(memory.New())
		defer c.Close()
		if _, err := NewRWMutex(c.Client, "k", WithReadLinger(c.RenewInterval()+1)); err == nil {
			t.Error("NewRWMutex took a linger longer than the renew interval")
		}
		if _, err := NewRWMutex(c.Client, "k", WithReadLinger(-1)); err == nil {
			t.Error("NewRWMutex took a negative linger")
		}
		if _, err := NewRWMutex(c.Client, "k", WithReadLinger(c.RenewInterval())); err != nil {
			t.Error(err)
		}
	})
}

// TestCloseEndsTheLingeringClaim: Close ends a lingering read claim with
// every other claim: another process's TryLock holds at once after it.
func TestCloseEndsTheLingeringClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := NewMemClientOn(store)
		b := NewMemClientOn(store)
		defer b.Close()
		rw := lingerRW(t, a.Client)
		readOnce(rw)
		w := lingerRW(t, b.Client)
		if w.TryLock() {
			t.Fatal("TryLock held beside a lingering read claim")
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if !w.TryLock() {
			t.Fatal("TryLock failed after the lingering claim's Client closed")
		}
		w.Unlock()
	})
}

// TestReadLingerOffByDefault: without WithReadLinger, RUnlock releases
// its read claim (it sends the end marker) even where the process hears
// waiters, and the store shows no reader after it: the linger is opt-in.
func TestReadLingerOffByDefault(t *testing.T) {
	for _, tc := range hearingWaiters {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cc := &callCounter{}
				c := NewMemClientOn(memory.New(), append(tc.opts(), countingCalls(cc))...)
				defer c.Close()
				rw, err := NewRWMutex(c.Client, "k")
				if err != nil {
					t.Fatal(err)
				}
				rw.RLock()
				synctest.Wait()
				before := cc.snapshot()
				rw.RUnlock()
				if d := sent(cc, before); d["Insert"]+d["InsertOrdered"]+d["InsertEach"] == 0 {
					t.Errorf("RUnlock sent %v, want its end marker", d)
				}
				if h, ok := c.Holder("dsync:rw/k"); ok {
					t.Errorf("the store shows %v after RUnlock, want no claim", h)
				}
			})
		})
	}
}

// A linger is measured from its claim's first RUnlock, not renewed by
// each: a reader that reads more often than the linger still ends its
// claim every linger, so a writer that cannot be heard (no hints, behind
// a reader that hears only hints) waits a linger and a poll, not for as
// long as the reader reads. With the linger renewed at every RUnlock (a
// review found it), the writer held only after the reader's 60 s loop
// ended (75 s); measured from the first RUnlock, 16.7 s.
func TestLingerDoesNotOutliveItsFirstRUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, net := memory.New(), &hintNet{}
		a := NewMemClientOn(store, net.member())
		defer a.Close()
		other := NewMemClientOn(store, net.member()) // a second process that takes hints
		defer other.Close()
		b := NewMemClientOn(store) // no hints: announces on the store's stream only
		defer b.Close()
		r := lingerRW(t, a.Client)
		w := lingerRW(t, b.Client)
		start := time.Now()
		const loop = 60 * time.Second
		done := make(chan struct{})
		go func() {
			defer close(done)
			for time.Since(start) < loop {
				r.RLock()
				time.Sleep(10 * time.Millisecond)
				r.RUnlock()
				time.Sleep(time.Second)
			}
		}()
		time.Sleep(100 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 2*loop)
		defer cancel()
		if err := w.LockContext(ctx); err != nil {
			t.Fatalf("Lock: %v", err)
		}
		took := time.Since(start)
		w.Unlock()
		t.Logf("the writer without hints held %v after it called Lock (the reader reads every second for %v)", took, loop)
		if took >= loop/2 {
			t.Errorf("the writer held %v after it called Lock: the reader's claim outlived its linger", took)
		}
		<-done
	})
}
