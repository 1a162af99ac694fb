package hint

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestDeferredEndsGoOutAsTheFeedStops: the ends put off by endDefer are
// sent at once when the feed stops, before its socket closes: a Client
// closes its feed right after it ended its claims (and a program that
// releases exits), and a waiter that counts such an end would wait for
// its poll. The timers that fire after the stop send nothing.
func TestDeferredEndsGoOutAsTheFeedStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rec := needFeed(t)
		until := f.store.ServerTime().Earliest.Add(time.Minute)
		for i, need := range []uint32{1, 2, 3} {
			f.noteInterest("k", 10, addr(i), until, told{from: "p" + addr(i), seq: 1, need: need})
		}
		f.send(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10})
		if got, want := rec.written(), []string{addr(0)}; !slices.Equal(got, want) {
			t.Fatalf("at once, the end went to %v, want %v", got, want)
		}
		f.closeConn()
		got := rec.written()
		slices.Sort(got[1:])
		if want := []string{addr(0), addr(1), addr(2)}; !slices.Equal(got, want) {
			t.Errorf("as the feed stopped, the end had gone to %v, want %v: the ends put off were lost", got, want)
		}
		time.Sleep(2 * endDefer)
		synctest.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.afterClosed != 0 || len(rec.to) != 3 {
			t.Errorf("after the stop, %d datagrams were written to the closed socket (%d in all): the timers still sent", rec.afterClosed, len(rec.to))
		}
	})
}

// TestDeferredEndNotCountedWithoutSocket: an end whose only waiters only
// count it is not reported as sent when this process cannot send hints
// (no socket or no key): Publish then fails (errNotSent), as its
// contract says, instead of counting hints that never go.
func TestDeferredEndNotCountedWithoutSocket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, what := range []string{"socket", "key"} {
			f, err := New(memory.New(), nil, Config{Listen: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			rec := &writeOrder{}
			f.mu.Lock()
			if what == "socket" {
				f.key = bytes.Repeat([]byte{7}, 32)
			} else {
				f.conn = rec
			}
			f.mu.Unlock()
			until := f.store.ServerTime().Earliest.Add(time.Minute)
			f.noteInterest("k", 10, addr(0), until, told{from: "p", seq: 1, need: 2})
			err = f.Publish(context.Background(), driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10})
			if !errors.Is(err, errNotSent) {
				t.Errorf("without a %s, Publish of an end put off returned %v, want errNotSent", what, err)
			}
			time.Sleep(2 * endDefer)
			synctest.Wait()
			if got := rec.written(); len(got) != 0 {
				t.Errorf("without a %s, the end went to %v", what, got)
			}
		}
	})
}
