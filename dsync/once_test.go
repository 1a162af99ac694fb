package dsync_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

func newOnce(t *testing.T, b *dsync.Client, key string, opts ...dsync.Option) *dsync.Once {
	t.Helper()
	o, err := dsync.NewOnce(b, key, append([]dsync.Option{quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Processes that call Do at once run f once between them; every Do
// returns nil once it has; f sees its hold's token.
func TestOnceRunsOnceAcrossProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		var runs atomic.Int32
		var token atomic.Uint64
		f := func(ctx context.Context) error {
			runs.Add(1)
			tok, ok := dsync.TokenOf(ctx)
			if !ok || tok == 0 {
				t.Error("TokenOf inside f found no token")
			}
			token.Store(tok)
			time.Sleep(50 * time.Millisecond)
			return nil
		}
		var wg sync.WaitGroup
		for range 4 {
			o := newOnce(t, newClient(t, store), "migrate")
			for range 2 {
				wg.Go(func() {
					if err := o.Do(context.Background(), f); err != nil {
						t.Error(err)
					}
				})
			}
		}
		wg.Wait()
		if runs.Load() != 1 {
			t.Fatalf("f ran %d times", runs.Load())
		}
		late := newOnce(t, newClient(t, store), "migrate")
		if done, err := late.Done(context.Background()); err != nil || !done {
			t.Fatalf("Done = %v, %v", done, err)
		}
		if err := late.Do(context.Background(), f); err != nil || runs.Load() != 1 {
			t.Fatalf("a later Do: %v, %d runs", err, runs.Load())
		}
		rec, found, err := store.Get(context.Background(), driver.DoneID("dsync:once/migrate"))
		if err != nil || !found || rec.Token != token.Load() {
			t.Fatalf("record %+v, %v, %v; want token %d", rec, found, err, token.Load())
		}
		if err := late.Do(context.Background(), nil); err == nil {
			t.Fatal("Do accepted a nil function")
		}
		if _, ok := dsync.TokenOf(context.Background()); ok {
			t.Fatal("TokenOf found a token outside Do")
		}
	})
}

// When f fails, Do returns its error and the next Do, queued or later,
// runs it again.
func TestOnceRetriesAFailedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newOnce(t, newClient(t, store), "k")
		b := newOnce(t, newClient(t, store), "k")
		boom := errors.New("boom")
		var runs atomic.Int32
		release := make(chan struct{})
		aDone := make(chan error, 1)
		go func() {
			aDone <- a.Do(context.Background(), func(context.Context) error {
				runs.Add(1)
				<-release
				return boom
			})
		}()
		synctest.Wait()
		bDone := make(chan error, 1)
		go func() {
			bDone <- b.Do(context.Background(), func(context.Context) error {
				runs.Add(1)
				return nil
			})
		}()
		synctest.Wait()
		if runs.Load() != 1 {
			t.Fatalf("%d runs while the first runs", runs.Load())
		}
		close(release)
		if err := <-aDone; err != boom {
			t.Fatalf("Do of a failing f = %v, want its error", err)
		}
		if err := <-bDone; err != nil {
			t.Fatal(err)
		}
		if runs.Load() != 2 {
			t.Fatalf("%d runs, want 2 (a failure, then a success)", runs.Load())
		}
		if err := a.Do(context.Background(), func(context.Context) error { runs.Add(1); return nil }); err != nil || runs.Load() != 2 {
			t.Fatalf("Do after the success: %v, %d runs", err, runs.Load())
		}
	})
}

// f's context is cancelled with ErrLost when the hold is lost; the run
// does not count, and the next Do runs f again.
func TestOnceCancelsFOnLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		f := newFlaky(store)
		const ttl = time.Second
		a := newOnce(t, newClient(t, f, dsync.ClientWithTTL(ttl)), "k")
		err := a.Do(context.Background(), func(ctx context.Context) error {
			f.renewDown.Store(true)
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, dsync.ErrLost) {
				t.Errorf("f's context ended with %v, want ErrLost", cause)
			}
			return ctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do = %v, want f's error", err)
		}
		b := newOnce(t, newClient(t, store, dsync.ClientWithTTL(ttl)), "k")
		ran := false
		if err := b.Do(context.Background(), func(context.Context) error { ran = true; return nil }); err != nil || !ran {
			t.Fatalf("the next Do: %v, ran %v", err, ran)
		}
	})
}

// lostRecords fails the inserts of done records while fail is set; with
// applied set, the first is applied and its reply lost (an unknown
// outcome that landed), and fail is cleared.
type lostRecords struct {
	*memory.Store
	fail      atomic.Bool
	applied   bool
	tries     atomic.Int32
	renewDown atomic.Bool // renewals fail too
}

func (s *lostRecords) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if s.renewDown.Load() {
		return false, errDown
	}
	return s.Store.RenewSession(ctx, id, gen, expires)
}

// Roles: the store's, without the record of up-time (withoutUptime).
func (s *lostRecords) Roles() driver.Roles { return withoutUptime(s.Store.Roles()) }

func (s *lostRecords) InsertSession(ctx context.Context, sess driver.Session) error {
	if s.renewDown.Load() && sess.Gen > 0 {
		return errDown
	}
	return s.Store.InsertSession(ctx, sess)
}

func (s *lostRecords) Insert(ctx context.Context, d driver.Doc) error {
	if d.Kind == driver.KindDone && s.fail.Load() {
		s.tries.Add(1)
		if s.applied {
			_ = s.Store.Insert(ctx, d)
			s.fail.Store(false)
		}
		return errDown
	}
	return s.Store.Insert(ctx, d)
}

// A record whose insert answered an error is sent again with the same
// nonce: the duplicate is recognised as its own, and Do returns nil.
func TestOnceRecordOfUnknownOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &lostRecords{Store: memory.New(), applied: true}
		s.fail.Store(true)
		o := newOnce(t, newClient(t, s), "k")
		err := o.Do(context.Background(), func(context.Context) error {
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if s.tries.Load() != 1 {
			t.Fatalf("%d failed inserts of the record, want 1", s.tries.Load())
		}
		if done, err := newOnce(t, newClient(t, s.Store), "k").Done(context.Background()); err != nil || !done {
			t.Fatalf("Done = %v, %v", done, err)
		}
	})
}

// A record that cannot be confirmed before the hold is lost: Do says so,
// the hold is not released (its claim ends with its session), and the
// next Do runs f again only once that session expired.
func TestOnceRecordUnconfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		s := &lostRecords{Store: store}
		const ttl = time.Second
		a := newOnce(t, newClient(t, s, dsync.ClientWithTTL(ttl)), "k")
		start := time.Now()
		err := a.Do(context.Background(), func(context.Context) error {
			s.fail.Store(true)
			s.renewDown.Store(true) // the store is out of reach from here on
			return nil
		})
		if !errors.Is(err, dsync.ErrUnconfirmed) {
			t.Fatalf("Do = %v, want ErrUnconfirmed", err)
		}
		if d := time.Since(start); d != ttl-ttl/20 {
			t.Fatalf("Do gave up after %v, want at the hold's deadline %v", d, ttl-ttl/20)
		}
		b := newOnce(t, newClient(t, store, dsync.ClientWithTTL(ttl)), "k")
		ran := false
		if err := b.Do(context.Background(), func(context.Context) error { ran = true; return nil }); err != nil || !ran {
			t.Fatalf("the next Do: %v, ran %v", err, ran)
		}
		if d := time.Since(start); d < ttl {
			t.Fatalf("ran again after %v: before the first hold's session expired", d)
		}
	})
}

// A panic in f releases the lock and records nothing.
func TestOncePanicReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newOnce(t, newClient(t, store), "k")
		func() {
			defer func() {
				if r := recover(); r != "oops" {
					t.Errorf("recovered %v", r)
				}
			}()
			_ = a.Do(context.Background(), func(context.Context) error { panic("oops") })
		}()
		b := newOnce(t, newClient(t, store), "k")
		ran := false
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := b.Do(ctx, func(context.Context) error { ran = true; return nil }); err != nil || !ran {
			t.Fatalf("Do after a panic: %v, ran %v", err, ran)
		}
	})
}

// P runs f; the store stops answering P, so P's renewals fail and its
// record's insert is held up on the way; P's hold ends at its deadline; Q
// takes over once P's session expired, reads no record and runs f; P's
// insert then lands, just before Q's, and its reply reaches P within the
// attempt's timeout. f ran twice, so neither Do may return nil: P's reply
// came after its hold ended (ErrUnconfirmed), and Q's record met P's
// (ErrRanTwice).
func TestOnceRecordConfirmedAfterTheHoldEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		const ttl = time.Second
		p := dsync.NewMemClientOn(store, dsync.ClientWithTTL(ttl))
		defer p.Close()
		q := dsync.NewMemClientOn(store, dsync.ClientWithTTL(ttl))
		defer q.Close()
		po := newOnce(t, p.Client, "k")
		qo := newOnce(t, q.Client, "k")
		ctx := context.Background()

		var runs atomic.Int32
		pStarted := make(chan struct{})
		pDone := make(chan error, 1)
		go func() {
			pDone <- po.Do(ctx, func(context.Context) error {
				runs.Add(1)
				p.SetAnswering(false)
				close(pStarted)
				// Return while the hold is still valid (its deadline is
				// near the TTL): the record's insert goes out in time, is
				// held up on the way, and its attempt lasts a TTL, beyond
				// the moment Q takes over.
				time.Sleep(ttl / 2)
				return nil
			})
		}()
		<-pStarted
		var pErr error
		qErr := qo.Do(ctx, func(context.Context) error {
			runs.Add(1)
			p.SetAnswering(true) // P's insert lands now, and P hears of it
			pErr = <-pDone
			return nil
		})
		if runs.Load() != 2 {
			t.Fatalf("f ran %d times, want twice (the test's faults did not happen)", runs.Load())
		}
		if !errors.Is(pErr, dsync.ErrUnconfirmed) {
			t.Errorf("P's Do = %v, want ErrUnconfirmed: its record's reply came after its hold ended", pErr)
		}
		if !errors.Is(qErr, dsync.ErrRanTwice) {
			t.Errorf("Q's Do = %v, want ErrRanTwice: its record met P's, which landed after Q's read", qErr)
		}
		rec, found, err := store.Get(ctx, driver.DoneID("dsync:once/k"))
		if err != nil || !found {
			t.Fatalf("record %+v, %v, %v", rec, found, err)
		}
		// The key is done: a later Do anywhere runs nothing and returns nil.
		for _, o := range []*dsync.Once{po, qo, newOnce(t, newClient(t, store), "k")} {
			if err := o.Do(ctx, func(context.Context) error { runs.Add(1); return nil }); err != nil || runs.Load() != 2 {
				t.Fatalf("a later Do: %v, %d runs", err, runs.Load())
			}
		}
	})
}
