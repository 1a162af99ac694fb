package clienthook_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// embedding wraps a store the way test wrappers do, hiding its optional
// interfaces; it counts the sessions it sees inserted.
type embedding struct {
	driver.Store
	sessions int
}

func (e *embedding) InsertSession(ctx context.Context, s driver.Session) error {
	e.sessions++
	return e.Store.InsertSession(ctx, s)
}

// ownRuns is a wrapper that reads runs itself (it fails them).
type ownRuns struct{ driver.Store }

func (ownRuns) GetRun(context.Context, string, uint64, uint64) ([]driver.Doc, error) {
	return nil, driver.ErrRunsUnsupported
}

// bare is a store with none of the optional interfaces.
type bare struct{ driver.Store }

func TestPassOptional(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	if err := mem.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	w := &embedding{Store: mem}
	if _, ok := driver.Store(w).(driver.RunReader); ok {
		t.Fatal("the wrapper itself is a RunReader: the test shows nothing")
	}
	s := clienthook.PassOptional(w, mem)
	rr, ok := s.(driver.RunReader)
	if !ok {
		t.Fatal("PassOptional hides driver.RunReader")
	}
	ps, ok := s.(driver.PeerStore)
	if !ok {
		t.Fatal("PassOptional hides driver.PeerStore")
	}
	// The wrapper's own methods still run; the optional ones reach the
	// store beneath.
	if err := s.InsertSession(ctx, driver.Session{ID: "s", ExpiresAt: mem.ServerTime().Latest.Add(time.Minute)}); err != nil || w.sessions != 1 {
		t.Fatalf("InsertSession through the result: err %v, seen by the wrapper %d times", err, w.sessions)
	}
	if _, err := rr.GetRun(ctx, "k", 1, 2); err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	key, err := ps.HintKey(ctx, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil || len(key) == 0 {
		t.Fatalf("HintKey: %q, %v", key, err)
	}

	// A wrapper's own GetRun is kept, beside the store's PeerStore.
	s = clienthook.PassOptional(ownRuns{mem}, mem)
	if _, err := s.(driver.RunReader).GetRun(ctx, "k", 1, 2); err != driver.ErrRunsUnsupported {
		t.Fatalf("the wrapper's own GetRun was replaced: %v", err)
	}
	if _, ok := s.(driver.PeerStore); !ok {
		t.Fatal("PassOptional hides driver.PeerStore beside a wrapper's own GetRun")
	}

	// Nothing to pass on: the wrapper is returned as it is.
	b := bare{mem}
	if _, ok := clienthook.PassOptional(&embedding{Store: b}, b).(*embedding); !ok {
		t.Fatal("a wrapper of a store without optional interfaces was changed")
	}
	if _, ok := clienthook.PassOptional(&embedding{Store: b}, b).(driver.RunReader); ok {
		t.Fatal("PassOptional made up a RunReader the store beneath lacks")
	}
}
