package leader_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
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
		p, stop := newRequestPair(t, leader.WithHeartbeatInterval(heartbeat))
		defer stop()
		w, a, b, ctx, info := p.w, p.a, p.b, p.ctx, p.info
		// ghost is a live member that never campaigns: its status is
		// written every heartbeat, and it never claims the lease.
		p.wg.Go(func() {
			for ctx.Err() == nil {
				_ = w.members.PutMember(ctx, "cron", leader.Member{ID: "ghost", Host: "h", PID: 1})
				select {
				case <-ctx.Done():
				case <-time.After(heartbeat / 2):
				}
			}
		})
		time.Sleep(2 * heartbeat) // every status written
		if _, err := operator.RequestTransfer(ctx, nil, w.members, "cron", info.Token, "ghost", "test", ""); err != nil {
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
		p.awaitB(t, 2*ttl)
	})
}
