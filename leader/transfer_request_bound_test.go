package leader_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// TestRequestedTransferIsBounded: a request naming a live member that
// never queues holds the handover (the leader's status shows it) for
// three member max ages at most; then the leader's own Transfer runs,
// and hands over, where it would otherwise wait for the requested one
// for the rest of the term (one Transfer at a time).
func TestRequestedTransferIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const heartbeat = time.Second
		const bound = 3 * 3 * heartbeat // requestedTransferBound member max ages
		w := newWorld()
		ctx, cancel := context.WithCancel(context.Background())
		l := &termLog{}
		var wg sync.WaitGroup
		a := newElection(t, w.process(t), leader.WithHeartbeatInterval(heartbeat))
		b := newElection(t, w.process(t), leader.WithHeartbeatInterval(heartbeat))
		wg.Go(func() { l.run(ctx, a, "a") })
		synctest.Wait()
		wg.Go(func() { l.run(ctx, b, "b") })
		synctest.Wait()
		// ghost is a live member that never campaigns: its status is
		// written every heartbeat, and it never claims the lease.
		wg.Go(func() {
			for ctx.Err() == nil {
				_ = w.members.PutMember(ctx, "cron", leader.Member{ID: "ghost", Host: "h", PID: 1})
				select {
				case <-ctx.Done():
				case <-time.After(heartbeat / 2):
				}
			}
		})
		defer func() {
			cancel()
			wg.Wait()
			_ = a.Close()
			_ = b.Close()
		}()
		info, err := a.Leader(ctx)
		if err != nil || info.ID != a.ID() {
			t.Fatalf("Leader = %+v, %v; want a", info, err)
		}
		time.Sleep(2 * heartbeat) // every status written
		if _, err := leader.RequestTransfer(ctx, w.members, "cron", info.Token, "ghost", "test", ""); err != nil {
			t.Fatal(err)
		}
		asked := time.Now()
		for {
			m, _, err := w.members.Member(ctx, "cron", a.ID())
			if err == nil && m.Handover.To == "ghost" {
				break
			}
			if time.Since(asked) > 3*heartbeat {
				t.Fatalf("a's status %+v, %v: the request to ghost was not acted on", m, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		// Within twice the bound: the requested Transfer gives up at the
		// bound, and this one, waiting for its turn, goes on.
		tctx, tcancel := context.WithTimeout(ctx, 2*bound)
		defer tcancel()
		if err := a.Transfer(tctx, b.ID()); err != nil {
			t.Fatalf("a.Transfer to b after a request to a candidate that never queues: %v, after %v", err, time.Since(asked))
		}
		if d := time.Since(asked); d < bound {
			t.Errorf("a handed over %v after the request; want the requested Transfer to hold the handover until its bound, %v", d, bound)
		}
		for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			if terms, _ := l.snapshot(); len(terms) >= 2 {
				if terms[0].cause != leader.ErrTransferred || terms[1].who != "b" {
					t.Fatalf("terms %+v, want a's ended by ErrTransferred, then b's", terms)
				}
				break
			}
			if time.Since(start) > 2*ttl {
				terms, _ := l.snapshot()
				t.Fatalf("terms %+v: b does not lead", terms)
			}
		}
		if _, v := l.snapshot(); len(v) > 0 {
			t.Fatal(v)
		}
	})
}
