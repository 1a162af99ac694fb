package dsync_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/event"
)

// outages records what an observer is told of outages ridden through.
type outages struct {
	mu  sync.Mutex
	got []event.Outage
}

func (o *outages) observer() event.Observer {
	return event.Observer{OutageRidden: func(e event.Outage) {
		o.mu.Lock()
		o.got = append(o.got, e)
		o.mu.Unlock()
	}}
}

func (o *outages) told() []event.Outage {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]event.Outage(nil), o.got...)
}

// TestObserverToldOfOutageRidden: a Client whose holds ride through an
// outage of the whole store tells its observer once, with when its lease
// was suspended (its holds' deadline) and resumed, and how many holds it
// kept; a Client cut off alone, whose hold ended, tells nothing.
func TestObserverToldOfOutageRidden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alone bool // only the holder is cut off
	}{
		{"store-wide outage", false},
		{"cut off alone", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var seen outages
				w := newOutageWorld(1, outGrace, dsync.ClientWithObserver(seen.observer()))
				defer w.close()
				other := dsync.NewMemClientOn(w.store, dsync.ClientWithTTL(outTTL), dsync.ClientWithOutageGrace(outGrace))
				defer other.Close()
				a, b := newMutex(t, w.clients[0].Client, "a"), newMutex(t, w.clients[0].Client, "b")
				a.Lock()
				b.Lock()
				waiter := locker(w.ctx, newMutex(t, other.Client, "a"))
				time.Sleep(outTTL / 2)
				synctest.Wait()

				w.down(true)
				if !tc.alone {
					other.Proc.SetReachable(false)
				}
				cut := time.Now()
				waitLost(t, a, outTTL)
				suspended := time.Now()
				time.Sleep(3 * outTTL)
				w.down(false)
				other.Proc.SetReachable(true)
				// Within a TTL of the return, while a resume keeps the
				// holds' claims for their owners.
				time.Sleep(outTTL / 2)
				synctest.Wait()

				got := seen.told()
				recs, err := w.store.Roles().Outages.ListOutages(w.ctx, time.Time{})
				if err != nil {
					t.Fatalf("ListOutages: %v", err)
				}
				if tc.alone {
					if len(got) != 0 || len(recs) != 0 {
						t.Errorf("told %+v, recorded %+v; want nothing: the holds ended", got, recs)
					}
					awaitLocked(t, waiter, outTTL, "the waiter did not take the key of a holder cut off alone")
					return
				}
				if len(got) != 1 {
					t.Fatalf("told %d outages ridden (%+v); want 1", len(got), got)
				}
				o := got[0]
				if o.Holds != 2 || o.Suspended.Before(cut) || o.Suspended.After(suspended) || !o.Resumed.After(o.Suspended) {
					t.Errorf("told %+v; want 2 holds, suspended between the cut (%v) and Lost (%v), resumed after", o, cut, suspended)
				}
				// The store keeps the record, for dsync status: the
				// store's clock is the test's here.
				if len(recs) != 1 {
					t.Fatalf("recorded %+v; want one outage ridden through", recs)
				}
				if r := recs[0]; r.Holds != 2 || r.Session == "" || r.PID == 0 || !r.Suspended.Equal(o.Suspended) || !r.Resumed.Equal(o.Resumed) {
					t.Errorf("recorded %+v; want the holder's session's %+v, with its host and pid (the waiter's session kept no hold: no record)", r, o)
				}
				for _, m := range []*dsync.Mutex{a, b} {
					if err := m.LockContext(w.ctx); err != nil {
						t.Fatalf("LockContext after the outage = %v; want the hold back", err)
					}
				}
				if err, ok := lockedBy(waiter); ok {
					t.Errorf("the waiter's Lock returned %v after an outage of the whole store", err)
				}
				if got := seen.told(); len(got) != 1 {
					t.Errorf("told %d outages ridden after the holds were taken back; want 1", len(got))
				}
			})
		})
	}
}
