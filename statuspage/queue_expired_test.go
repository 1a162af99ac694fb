package statuspage_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// lostSessionStore is a memory store whose reads of one session find it
// as a store whose sessions were dropped does: missing, or (with got)
// brought back by a late insert of a later generation, without its first
// generation and with that insert's old expiry.
type lostSessionStore struct {
	*memory.Store
	session string
	got     *driver.Session
}

func (s *lostSessionStore) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	if id != s.session {
		return s.Store.GetSession(ctx, id)
	}
	if s.got == nil {
		return driver.Session{}, false, nil
	}
	return *s.got, true, nil
}

// TestQueueExpiredAsTheEngineJudges: Queue reports a claim Expired by the
// rule claimers end claims with (queue.Engine.ReadExpired). A claim whose
// own expiry passed while its owner holds on renewals, and whose session
// reads as missing, or as expired without its first generation, is not
// Expired: it holds (a claimer ends it only after it stayed missing for
// the claim's TTL). Queue reported it Expired (and the waiter behind it
// holding) by the old expiry alone. Found expired with its first
// generation, it is Expired.
func TestQueueExpiredAsTheEngineJudges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		w := newClientOn(t, mem, dsync.ClientWithTTL(time.Minute))
		m := newMutex(t, w, "k")
		m.Lock()
		defer m.Unlock()
		old := mem.ServerTime().Earliest
		time.Sleep(3 * time.Minute) // the holder renews; its claim's own expiry passes
		synctest.Wait()

		q, err := statuspage.NewReader(newClientOn(t, mem)).Queue(ctx, "k")
		if err != nil || len(q) != 1 || !q[0].Holds || q[0].Expired {
			t.Fatalf("Queue(k) = %+v, %v; want its holder", q, err)
		}
		session := q[0].Session
		for _, tc := range []struct {
			name        string
			got         *driver.Session
			wantExpired bool
		}{
			{name: "missing"},
			{name: "expired without its first generation", got: &driver.Session{ID: session, Gen: 3, ExpiresAt: old}},
			{name: "expired with its first generation", got: &driver.Session{ID: session, ExpiresAt: old, HasFirst: true}, wantExpired: true},
		} {
			reader := newClientOn(t, &lostSessionStore{Store: mem, session: session, got: tc.got})
			q, err := statuspage.NewReader(reader).Queue(ctx, "k")
			if err != nil || len(q) != 1 || q[0].Expired != tc.wantExpired || q[0].Holds == tc.wantExpired {
				t.Errorf("session %s: Queue(k) = %+v, %v; want Expired %v", tc.name, q, err, tc.wantExpired)
			}
		}
	})
}
