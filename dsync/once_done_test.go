package dsync_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// heldDoneRead answers the nth read of a done record late: the read is
// made when sent (it sees the store as it was then), and its reply
// waits until release is closed. sent is closed when it was made.
type heldDoneRead struct {
	*memory.Store
	n             int32
	reads         atomic.Int32
	sent, release chan struct{}
}

func (s *heldDoneRead) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	d, found, err := s.Store.Get(ctx, id)
	if id == driver.DoneID("dsync:once/k") && s.reads.Add(1) == s.n {
		close(s.sent)
		<-s.release
	}
	return d, found, err
}

// What Done reporting true promises, and what it does not (the Once
// doc): P runs f, and its record's insert is held up on the way until
// after its hold ended; Q takes over and reads the key under its hold,
// and that read's reply is slow. P's record lands while Q's read is out:
// a Done elsewhere reports true, and Q's run of f starts after it, on
// the reply sent before the record landed. Neither Do returns nil: P's
// reply came after its hold ended (ErrUnconfirmed), and Q's record meets
// P's (ErrRanTwice). Once a Do returned nil, by contrast, no run starts
// (TestOnceRunsOnceAcrossProcesses, TestOnceRecordConfirmedAfterTheHoldEnded).
func TestOnceDoneTrueBeforeALateReadRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		const ttl = time.Second
		p := dsync.NewMemClientOn(store, dsync.ClientWithTTL(ttl))
		defer p.Close()
		// Q's first read of the record is the one before it claims; its
		// second, the one under its hold, is answered late.
		qs := &heldDoneRead{Store: store, n: 2, sent: make(chan struct{}), release: make(chan struct{})}
		po := newOnce(t, p.Client, "k")
		qo := newOnce(t, newClient(t, qs, dsync.ClientWithTTL(ttl)), "k")
		ro := newOnce(t, newClient(t, store), "k")
		ctx := context.Background()

		var runs atomic.Int32
		var doneSaidTrue atomic.Bool
		pStarted := make(chan struct{})
		pDone := make(chan error, 1)
		go func() {
			pDone <- po.Do(ctx, func(context.Context) error {
				runs.Add(1)
				p.SetAnswering(false)
				close(pStarted)
				time.Sleep(ttl / 2) // the record goes out in time and is held up
				return nil
			})
		}()
		<-pStarted
		go func() {
			// Q holds, and its read under the hold found no record.
			<-qs.sent
			p.SetAnswering(true) // P's record lands now
			synctest.Wait()
			done, err := ro.Done(ctx)
			if err != nil || !done {
				t.Errorf("Done after P's record landed = %v, %v; want true", done, err)
			}
			doneSaidTrue.Store(done)
			close(qs.release)
		}()
		qErr := qo.Do(ctx, func(context.Context) error {
			runs.Add(1)
			if !doneSaidTrue.Load() {
				t.Error("Q's run started before Done reported true: the test's schedule did not happen")
			}
			return nil
		})
		pErr := <-pDone
		if runs.Load() != 2 {
			t.Fatalf("f ran %d times, want twice: Q's run starts after Done reported true", runs.Load())
		}
		if !errors.Is(pErr, dsync.ErrUnconfirmed) {
			t.Errorf("P's Do = %v, want ErrUnconfirmed: its record's reply came after its hold ended", pErr)
		}
		if !errors.Is(qErr, dsync.ErrRanTwice) {
			t.Errorf("Q's Do = %v, want ErrRanTwice: its record met P's, which landed after Q's read was sent", qErr)
		}
	})
}
