package leader_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// putLog keeps the member writes of an election, with when each was made.
type putLog struct {
	leader.MemberStore
	mu   sync.Mutex
	puts []put
}

type put struct {
	at time.Time
	m  leader.Member
}

func (p *putLog) PutMember(ctx context.Context, election string, m leader.Member) error {
	p.mu.Lock()
	p.puts = append(p.puts, put{time.Now(), m})
	p.mu.Unlock()
	return p.MemberStore.PutMember(ctx, election, m)
}

// TestStatusWrittenAfterTheTakeover: a candidate that resigns writes its
// status (no longer leading) some time after its term ended, not as it
// ends: that write would reach the store while the next leader takes over
// (its walk's reads), and slow the takeover down.
func TestStatusWrittenAfterTheTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		log := &putLog{MemberStore: w.members}
		p := w.process(t)
		p.members = log
		a := newElection(t, p, leader.WithHeartbeatInterval(time.Hour))
		b := newElection(t, w.process(t), leader.WithHeartbeatInterval(time.Hour))
		defer a.Close()
		defer b.Close()
		ctx := context.Background()
		if _, err := a.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		elected := make(chan time.Time, 1)
		go func() {
			if _, err := b.Campaign(ctx); err != nil {
				t.Error(err)
			}
			elected <- time.Now()
		}()
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		log.mu.Lock()
		before := len(log.puts)
		log.mu.Unlock()
		resigned := time.Now()
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		took := <-elected
		time.Sleep(time.Second)
		synctest.Wait()
		log.mu.Lock()
		after := log.puts[before:]
		log.mu.Unlock()
		if len(after) != 1 || after[0].m.Leader {
			t.Fatalf("after Resign the member wrote %+v, want one status, not leading", after)
		}
		if !after[0].at.After(took) || after[0].at.Sub(resigned) < 50*time.Millisecond {
			t.Fatalf("the status was written %v after Resign, the next leader took over %v after: want it written 50ms or more after Resign, and after the takeover",
				after[0].at.Sub(resigned), took.Sub(resigned))
		}
	})
}
