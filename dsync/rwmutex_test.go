package dsync_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

var _ sync.Locker = (*dsync.RWMutex)(nil)

func newRWMutex(t *testing.T, b *dsync.Client, key string, opts ...dsync.Option) *dsync.RWMutex {
	t.Helper()
	rw, err := dsync.NewRWMutex(b, key, append([]dsync.Option{quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

// started runs f in a goroutine and returns a channel closed when it
// returns.
func started(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

func returned(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Readers of three processes share the key; a writer waits for them, and
// a reader that comes after the waiting writer waits for the writer (FIFO:
// no writer starvation). Tokens follow the queue.
func TestRWMutexFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		r1 := newRWMutex(t, newClient(t, store), "k")
		r2 := newRWMutex(t, newClient(t, store), "k")
		w := newRWMutex(t, newClient(t, store), "k")
		r3 := newRWMutex(t, newClient(t, store), "k")
		r1.RLock()
		r2.RLock()
		wDone := started(w.Lock)
		synctest.Wait()
		r3Done := started(r3.RLock)
		synctest.Wait()
		if returned(wDone) {
			t.Fatal("a writer holds while readers do")
		}
		if returned(r3Done) {
			t.Fatal("a reader queued behind a waiting writer passed it")
		}
		// What dsync status shows: the two readers hold, the writer and
		// the reader behind it wait.
		q, err := statuspage.NewReader(newClient(t, store)).Queue(context.Background(), "dsync:rw/k")
		if err != nil {
			t.Fatal(err)
		}
		var holds []bool
		for _, c := range q {
			holds = append(holds, c.Holds)
		}
		if want := []bool{true, true, false, false}; !slices.Equal(holds, want) {
			t.Fatalf("Queue's Holds = %v, want %v", holds, want)
		}
		r1.RUnlock()
		synctest.Wait()
		if returned(wDone) {
			t.Fatal("a writer holds while a reader still does")
		}
		r2.RUnlock()
		<-wDone
		synctest.Wait()
		if returned(r3Done) {
			t.Fatal("a reader holds while the writer does")
		}
		wTok := w.Token()
		w.Unlock()
		<-r3Done
		if r3.Token() <= wTok {
			t.Fatalf("reader after the writer: token %d, writer's %d", r3.Token(), wTok)
		}
		r3.RUnlock()
	})
}

// One value read-locked by several goroutines holds one claim per RLock;
// RUnlock ends them one at a time (the oldest first), and Token reports
// the newest read hold.
func TestRWMutexManyReadersOneValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := dsync.NewMemClient()
		defer mem.Close()
		rw := newRWMutex(t, mem.Client, "k")
		other := newRWMutex(t, mem.Client, "k")
		rw.RLock()
		first := rw.Token()
		rw.RLock()
		second := rw.Token()
		if second <= first {
			t.Fatalf("tokens %d then %d", first, second)
		}
		if other.TryLock() {
			t.Fatal("a writer holds beside two read holds")
		}
		rw.RUnlock()
		if rw.Token() != second {
			t.Fatalf("token after the first RUnlock %d, want the remaining hold's %d", rw.Token(), second)
		}
		if other.TryLock() {
			t.Fatal("a writer holds beside a read hold")
		}
		rw.RUnlock()
		if rw.Token() != 0 {
			t.Fatalf("token of an unlocked RWMutex %d", rw.Token())
		}
		if !other.TryLock() {
			t.Fatal("a writer cannot hold a free key")
		}
		if other.Token() <= second {
			t.Fatalf("writer's token %d not above the readers' %d", other.Token(), second)
		}
		other.Unlock()
	})
}

// TryRLock holds beside readers and fails while a writer holds or waits;
// TryLock fails while anything holds; neither queues.
func TestRWMutexTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newRWMutex(t, newClient(t, store), "k")
		b := newRWMutex(t, newClient(t, store), "k")
		c := newRWMutex(t, newClient(t, store), "k")
		if !a.TryRLock() || !b.TryRLock() {
			t.Fatal("TryRLock fails on a key held by readers")
		}
		if c.TryLock() {
			t.Fatal("TryLock holds beside readers")
		}
		wDone := started(c.Lock)
		synctest.Wait()
		if b.TryRLock() {
			t.Fatal("TryRLock holds past a waiting writer")
		}
		a.RUnlock()
		b.RUnlock()
		<-wDone
		if a.TryRLock() || a.TryLock() {
			t.Fatal("a try holds while a writer does")
		}
		c.Unlock()
		if !a.TryLock() {
			t.Fatal("TryLock fails on a free key")
		}
		a.Unlock()
	})
}

// A lost read hold closes Lost, and RUnlockContext reports ErrLost; the
// next hold gets a fresh signal.
func TestRWMutexLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		f := newFlaky(store)
		const ttl = time.Second
		rw := newRWMutex(t, newClient(t, f, dsync.ClientWithTTL(ttl)), "k")
		select {
		case <-rw.Lost():
		default:
			t.Fatal("Lost of an unlocked RWMutex is not closed")
		}
		rw.RLock()
		rw.RLock()
		start := time.Now()
		f.renewDown.Store(true)
		<-rw.Lost()
		if d := time.Since(start); d != ttl-ttl/20 {
			t.Fatalf("lost after %v, want %v", d, ttl-ttl/20)
		}
		for range 2 {
			if err := rw.RUnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
				t.Fatalf("RUnlockContext = %v, want ErrLost", err)
			}
		}
		f.renewDown.Store(false)
		rw.Lock()
		select {
		case <-rw.Lost():
			t.Fatal("a new hold starts lost")
		default:
		}
		rw.Unlock()
	})
}

func TestRWMutexUnlockOfUnlockedPanics(t *testing.T) {
	mem := dsync.NewMemClient()
	defer mem.Close()
	rw := newRWMutex(t, mem.Client, "k")
	for name, f := range map[string]func(){"Unlock": rw.Unlock, "RUnlock": rw.RUnlock} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), name+" of unlocked RWMutex") {
					t.Errorf("%s of an unlocked RWMutex: recovered %v", name, r)
				}
			}()
			f()
		}()
	}
	rw.Lock()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("RUnlock of a write-locked RWMutex did not panic")
			}
		}()
		rw.RUnlock()
	}()
	rw.Unlock()
}

// A Mutex, an RWMutex and a Semaphore of one name are apart.
func TestFamilyNamespaces(t *testing.T) {
	mem := dsync.NewMemClient()
	defer mem.Close()
	m := newMutex(t, mem.Client, "k")
	rw := newRWMutex(t, mem.Client, "k")
	sem := newSemaphore(t, mem.Client, "k", 1)
	m.Lock()
	if !rw.TryLock() || !sem.TryAcquire(1) {
		t.Fatal("a Mutex excludes an RWMutex or a Semaphore of the same name")
	}
	for _, key := range []string{"k", "dsync:rw/k", "dsync:sem/k"} {
		if _, ok := mem.Holder(key); !ok {
			t.Fatalf("no holder of %q", key)
		}
	}
	sem.Release(1)
	rw.Unlock()
	m.Unlock()
	if _, err := dsync.NewRWMutex(mem.Client, ""); err == nil {
		t.Fatal("NewRWMutex accepted an empty key")
	}
}

// Processes reading and writing in a loop: a writer is never inside with
// anyone, readers do share, and a writer's token is above that of every
// hold that began before it.
func TestRWMutexHammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		var (
			mu              sync.Mutex
			readers, writer int
			shared          atomic.Int32
			maxTok          uint64 // the highest token of any hold begun
			holds           int
		)
		var wg sync.WaitGroup
		for p := range 4 {
			rw := newRWMutex(t, newClient(t, store, dsync.ClientWithTTL(time.Second)), "k")
			for g := range 3 {
				wg.Go(func() {
					for i := range 20 {
						write := (p+g+i)%4 == 0
						if write {
							rw.Lock()
						} else {
							rw.RLock()
						}
						mu.Lock()
						tok := rw.Token()
						if write {
							if readers > 0 || writer > 0 {
								t.Errorf("a writer inside with %d readers and %d writers", readers, writer)
							}
							if tok <= maxTok {
								t.Errorf("writer's token %d not above %d, begun before", tok, maxTok)
							}
							writer++
						} else {
							if writer > 0 {
								t.Errorf("a reader inside with a writer")
							}
							if readers > 0 {
								shared.Add(1)
							}
							readers++
						}
						maxTok = max(maxTok, tok)
						holds++
						mu.Unlock()
						time.Sleep(time.Duration(1+i%3) * time.Millisecond)
						mu.Lock()
						if write {
							writer--
						} else {
							readers--
						}
						mu.Unlock()
						if write {
							rw.Unlock()
						} else {
							rw.RUnlock()
						}
					}
				})
			}
		}
		wg.Wait()
		if holds != 4*3*20 || shared.Load() == 0 {
			t.Fatalf("%d holds, %d begun beside another reader", holds, shared.Load())
		}
	})
}
