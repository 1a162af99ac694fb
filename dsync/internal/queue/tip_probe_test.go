package queue_test

// Adversarial cases of the chained hold on this process's own shared or
// weighted release (tip.go), from the review of that change: the store
// emptied in between, the process's own exclusive claim racing it, another
// limit, a release made through Resume, a release that met a dead marker.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// hookStore is a memory store that counts reads and runs before the
// next ordered insert lands, once, what beforeInsert says.
type hookStore struct {
	*memory.Store
	reads        int
	beforeInsert func()
}

func newHookStore() *hookStore {
	s := &hookStore{}
	s.Store = memory.New().Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
		switch c.Op {
		case "Get", "GetSession":
			s.reads++
		case "InsertOrdered":
			if f := s.beforeInsert; f != nil {
				s.beforeInsert = nil
				f()
			}
		}
		return nil
	})
	return s
}

type proc struct {
	e    *queue.Engine
	sess string
}

// bothHold makes two processes on st: o's claim with terms other holds,
// then p's with terms mine, above it.
func bothHold(t *testing.T, st queue.Store, other, mine queue.Terms) (o, p proc, r, d *queue.Claim) {
	t.Helper()
	o, p = newProc(t, st), newProc(t, st)
	r = o.claim(t, "o", other)
	if h, err := o.walk(t, r); !h || err != nil {
		t.Fatalf("other: %v %v", h, err)
	}
	d = p.claim(t, "p", mine)
	if h, err := p.walk(t, d); !h || err != nil {
		t.Fatalf("mine: %v %v", h, err)
	}
	return o, p, r, d
}

func newProc(t *testing.T, st queue.Store) proc {
	t.Helper()
	e, err := queue.New(st, fixedClock{}, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := e.OpenSession(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return proc{e, sess}
}

func (p proc) claim(t *testing.T, owner string, terms queue.Terms) *queue.Claim {
	t.Helper()
	c, err := p.e.Claim(context.Background(), "k", owner, p.sess, terms, false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (p proc) walk(t *testing.T, c *queue.Claim) (bool, error) {
	t.Helper()
	h, _, err := p.e.Walk(context.Background(), c)
	return h, err
}

func (p proc) end(t *testing.T, c *queue.Claim, held bool) {
	t.Helper()
	if err := p.e.End(context.Background(), c, held); err != nil {
		t.Fatal(err)
	}
}

// The store emptied between this process's shared release and its next
// shared claim: the insert cannot find the released claim's shadow, so it
// must not hold on its insert.
func TestChainedTipAfterEmptying(t *testing.T) {
	for _, tc := range []struct {
		name        string
		other, mine queue.Terms
	}{
		{"shared", shared, shared},
		{"weighted", weighted(1), weighted(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newHookStore()
			_, p, _, d := bothHold(t, st, tc.other, tc.mine)
			p.end(t, d, true)
			st.Reset()
			h := p.claim(t, "p", tc.mine)
			held, err := p.walk(t, h)
			if held {
				t.Fatalf("a claim chained on a release the store lost holds (err %v)", err)
			}
			if !errors.Is(err, queue.ErrReset) {
				t.Fatalf("err %v, want ErrReset", err)
			}
		})
	}
}

// Two goroutines of one process: after its shared release, its exclusive
// claim lands right above it while its next shared claim, chained on the
// release, is being sent. The shared claim loses the epoch and walks: it
// must wait for the exclusive claim, which waits for the live reader.
func TestChainedTipRacesOwnExclusive(t *testing.T) {
	st := newHookStore()
	o, p, r, d := bothHold(t, st, shared, shared)
	p.end(t, d, true)
	var x *queue.Claim
	st.beforeInsert = func() { x = p.claim(t, "p-writer", excl) }
	s := p.claim(t, "p", shared)
	if x == nil || x.Epoch != d.Epoch+1 || s.Epoch != d.Epoch+2 {
		t.Fatalf("epochs: released %d, writer %v, reader %d", d.Epoch, x, s.Epoch)
	}
	if h, err := p.walk(t, x); h || err != nil {
		t.Fatalf("the writer holds beside a live reader: %v %v", h, err)
	}
	if h, err := p.walk(t, s); h || err != nil {
		t.Fatalf("a reader chained past its own waiting writer holds: %v %v", h, err)
	}
	o.end(t, r, true)
	if h, err := p.walk(t, x); !h || err != nil {
		t.Fatalf("the writer does not hold once the reader ended: %v %v", h, err)
	}
	if h, err := p.walk(t, s); h || err != nil {
		t.Fatalf("a reader holds beside the writer: %v %v", h, err)
	}
}

// A weighted release of one limit proves nothing for a claim of another:
// the claim above it walks, and waits for the live claim of the other
// limit below.
func TestChainedTipOtherLimit(t *testing.T) {
	st := newHookStore()
	_, p, _, d := bothHold(t, st, weighted(2), weighted(1))
	p.end(t, d, true)
	before := st.reads
	c := p.claim(t, "p", queue.Terms{Mode: queue.Weighted, Weight: 1, Limit: 4})
	if h, err := p.walk(t, c); h || err != nil {
		t.Fatalf("a claim of limit 4 above a live claim of limit 3 holds: %v %v", h, err)
	}
	if st.reads == before {
		t.Fatal("the claim of another limit read nothing")
	}
}

// The release is made through a claim rebuilt by Resume (as dsync ends
// its claims): the weight its hold passed is found by nonce. Rebuilt in
// another engine, whose walk never found it holding, it proves nothing
// for a weighted claim above it.
func TestChainedTipAfterResume(t *testing.T) {
	st := newHookStore()
	_, p, _, d := bothHold(t, st, weighted(2), weighted(1))
	p.end(t, queue.Resume(queue.Ref{Key: d.Key, Owner: d.Owner, Session: d.Session, Nonce: d.Nonce, Epoch: d.Epoch, Seg: d.Seg, Terms: d.Terms}), true)
	before := st.reads
	c := p.claim(t, "p", weighted(1))
	if h, err := p.walk(t, c); !h || err != nil || st.reads != before {
		t.Fatalf("chained on a resumed release: holds %v (%v) after %d reads", h, err, st.reads-before)
	}
	// Released from another engine of the same store: it knows the
	// release but not the weight below; with weight 2 below and 1 of its
	// own it may hold, but only after a walk.
	q := newProc(t, st)
	q.end(t, queue.Resume(queue.Ref{Key: c.Key, Owner: c.Owner, Session: c.Session, Nonce: c.Nonce, Epoch: c.Epoch, Seg: c.Seg, Terms: c.Terms}), true)
	big := q.claim(t, "q", weighted(2))
	if h, err := q.walk(t, big); h || err != nil {
		t.Fatalf("weight 2 over weight 2 live below (limit 3) holds: %v %v", h, err)
	}
}

// A shared claim of this process, marked dead by another process (its
// session found expired), then released here (the release meets the dead
// marker: ErrExists, taken for landed): the next shared claim chains on
// it. It held once with no writer live below, so the chained reader may
// hold; a writer queued above the dead claim must still wait for the
// reader below it.
func TestChainedTipOnDeadMarkedRelease(t *testing.T) {
	st := newHookStore()
	_, p, _, d := bothHold(t, st, shared, shared)
	// Another process records d dead (as a walker whose session read
	// found d's session expired would).
	if err := st.Insert(context.Background(), driver.Doc{ID: queue.EndID("k", d.Epoch, d.Nonce), Key: "k", Epoch: d.Epoch,
		Kind: queue.KindDead, Nonce: d.Nonce, Session: d.Session}); err != nil {
		t.Fatal(err)
	}
	p.end(t, d, true)
	h := p.claim(t, "p", shared)
	if held, err := p.walk(t, h); !held || err != nil {
		t.Fatalf("reader over a dead-marked reader with only readers below: %v %v", held, err)
	}
	w := p.claim(t, "p-writer", excl)
	if held, err := p.walk(t, w); held || err != nil {
		t.Fatalf("writer above live readers holds: %v %v", held, err)
	}
}
