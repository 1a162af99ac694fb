package dsync_test

import (
	"context"
	"errors"
	"github.com/go-dsync/dsync/dsync/event"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/statuspage"
)

// events records what an Observer is told, as lines.
type events struct {
	mu    sync.Mutex
	lines []string
	renew []event.Renewal
	held  []event.Held
	waits []int
}

func (e *events) add(s string) { e.mu.Lock(); e.lines = append(e.lines, s); e.mu.Unlock() }

func (e *events) observer() event.Observer {
	return event.Observer{
		Acquired: func(a event.Acquisition) { e.add("acquired " + a.Key + " " + string(a.Kind)) },
		AcquireFailed: func(a event.Acquisition, err error) {
			if errors.Is(err, dsync.ErrHeld) {
				e.add("try failed " + a.Key)
			} else {
				e.add("failed " + a.Key)
			}
		},
		Released: func(h event.Held) {
			e.add("released " + h.Key)
			e.mu.Lock()
			e.held = append(e.held, h)
			e.mu.Unlock()
		},
		Lost:        func(h event.Held, err error) { e.add("lost " + h.Key) },
		Waiting:     func(n int) { e.mu.Lock(); e.waits = append(e.waits, n); e.mu.Unlock() },
		Renewed:     func(r event.Renewal) { e.mu.Lock(); e.renew = append(e.renew, r); e.mu.Unlock() },
		RenewFailed: func(err error) { e.add("renew failed") },
	}
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.lines, "; ")
}

// The observer is told of acquisitions, releases, waits, tries that
// failed, renewals and their headroom, renewal failures and a lost hold,
// in order; and Health turns unhealthy when renewals lag, before the
// hold is lost.
func TestObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ev events
		const ttl = 3 * time.Second // renewed every second
		b := dsync.NewMemClient(dsync.ClientWithObserver(ev.observer()), dsync.ClientWithTTL(ttl))
		a, _ := dsync.NewMutex(b.Client, "k")
		w, _ := dsync.NewMutex(b.Client, "k")
		ctx := context.Background()
		if err := a.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if w.TryLock() {
			t.Fatal("TryLock of a held key held")
		}
		done := make(chan error)
		go func() { done <- w.LockContext(ctx) }()
		time.Sleep(2500 * time.Millisecond) // two renewals
		synctest.Wait()
		a.Unlock()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := b.Client.Health(time.Second); err != nil {
			t.Errorf("Health with renewals on time: %v", err)
		}
		b.SetReachable(false)
		time.Sleep(ttl / 3 * 2) // the renewal after the last confirmed one is late
		synctest.Wait()
		if err := b.Client.Health(time.Second / 2); err == nil {
			t.Error("Health with renewals failing for two renew intervals: nil")
		}
		rec := httptest.NewRecorder()
		statuspage.HealthHandler(b.Client, time.Second/2).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("HealthHandler answered %d, want 503", rec.Code)
		}
		<-w.Lost()
		b.SetReachable(true)
		_ = w.UnlockContext(ctx)
		b.Close() // delivers what is queued
		synctest.Wait()

		want := "acquired k mutex; try failed k; released k; acquired k mutex; renew failed; lost k"
		if got := ev.String(); !strings.HasPrefix(strings.ReplaceAll(got, "renew failed; ", ""), strings.ReplaceAll(want, "renew failed; ", "")) ||
			!strings.Contains(got, "renew failed") {
			t.Errorf("observed %q, want %q (renewal failures any number of times)", got, want)
		}
		if len(ev.renew) < 2 {
			t.Fatalf("observed %d renewals in 2.5 s at a 1 s interval, want 2", len(ev.renew))
		}
		for _, r := range ev.renew {
			// Renewed every TTL/3 with a lease of TTL minus TTL/20: about
			// two thirds of the TTL left at each.
			if r.TTL != ttl || r.Headroom < ttl/2 || r.Headroom > ttl {
				t.Errorf("renewal %+v: headroom out of (TTL/2, TTL)", r)
			}
		}
		if len(ev.held) != 1 || ev.held[0].Held != 2500*time.Millisecond || ev.held[0].Token == 0 {
			t.Errorf("released %+v, want one hold of 2.5 s with its token", ev.held)
		}
		// Each LockContext waits while it runs (a's, then w's); the try
		// does not count.
		if got := ev.waits; len(got) != 4 || got[0] != 1 || got[1] != 0 || got[2] != 1 || got[3] != 0 {
			t.Errorf("waiting counts %v, want [1 0 1 0]", got)
		}
	})
}

// A stuck observer delays nothing: locks go on while it blocks, and the
// events it could not take are counted.
func TestObserverThatBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unblock := make(chan struct{})
		var dropped int
		b := dsync.NewMemClient(dsync.ClientWithObserver(event.Observer{
			Acquired: func(event.Acquisition) { <-unblock },
			Dropped:  func(n int) { dropped += n },
		}))
		m, _ := dsync.NewMutex(b.Client, "k")
		const n = 3000 // more than the observer's queue holds
		for range n {
			m.Lock()
			//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
			m.Unlock()
		}
		close(unblock)
		b.Close()
		// Each Lock+Unlock makes four events (two waiting counts, acquired,
		// released): all but what the queue held were dropped.
		if dropped == 0 || dropped >= 4*n {
			t.Errorf("dropped %d events of %d locks with the observer stuck", dropped, n)
		}
	})
}

func TestClientWithObserverEmpty(t *testing.T) {
	if _, err := dsync.NewClient(nil, dsync.ClientWithObserver(event.Observer{})); err == nil {
		t.Error("NewClient accepted an observer with no callback")
	}
}
