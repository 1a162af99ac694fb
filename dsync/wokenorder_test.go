package dsync_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// readOrder is a costStore without runs that logs when each read by ID
// starts and ends, by what it reads ("start marker", "end marker", "start
// claim", ...).
type readOrder struct {
	*costStore
	mu  sync.Mutex
	log []string
}

func (s *readOrder) note(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, what)
}

func (s *readOrder) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	s.note("start " + idKind(id))
	defer s.note("end " + idKind(id))
	return s.costStore.Get(ctx, id)
}

// take returns the log since the last take, and starts it again.
func (s *readOrder) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.log
	s.log = nil
	return l
}

// TestWokenWaiterReadsInTurn: on a store that reads by ID only (FerretDB),
// the next holder's read of its own claim is sent only once the read of
// the end marker has been answered, never beside it, however it was
// woken. Issue 44 asked whether the two could go at once to save a round
// trip of the handoff: they cannot. The read back shows that the store
// was not emptied since the claim's insert, so that the marker read
// belongs to the claim's history; a marker sent before an emptying may
// land after it (DESIGN.md, rule 11), and a read back that the store
// answered before the emptying would not show the claim gone
// (dsync/internal/queue's confirmOwn; docs/architecture.md, "Why a hinted turn
// needs two reads").
func TestWokenWaiterReadsInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		mutex := func(seed uint64) (*dsync.Mutex, *readOrder) {
			s := &readOrder{costStore: newCostStore(mem, rand.New(rand.NewPCG(3, seed)), false)}
			m, err := dsync.NewMutex(newClient(t, s, dsync.ClientWithIdleAge(0)), "k")
			if err != nil {
				t.Fatal(err)
			}
			return m, s
		}
		a, _ := mutex(0)
		b, waiter := mutex(1)
		handOver(t, a, b, func() { waiter.take() })
		got := waiter.take()
		want := []string{"start marker", "end marker", "start claim", "end claim"}
		if !slices.Equal(got, want) {
			t.Errorf("the woken waiter's reads went %q, want %q: its own claim read only after the marker's answer", got, want)
		}
	})
}
