package dsyncmongo

import (
	"log/slog"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// infos returns the Info records, each as its message and attributes.
func (l *logRecords) infos() []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, rec := range l.recs {
		if rec.Level != slog.LevelInfo {
			continue
		}
		m := map[string]string{"msg": rec.Message}
		rec.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.String()
			return true
		})
		out = append(out, m)
	}
	return out
}

// TestStoreSaysWhereItKeepsLocks: a store's first call says once, at
// Info through the store's logger, which database and lock collection
// it uses, so that two programs that should share locks and do not can
// see why; later calls say nothing more.
func TestStoreSaysWhereItKeepsLocks(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	var log logRecords
	s, err := NewStore(db, WithCollection("jobs_locks"), WithLogger(slog.New(&log)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Roles().Reads.PrepareRead(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	infos := log.infos()
	if len(infos) != 1 || infos[0]["database"] != db.Name() || infos[0]["collection"] != "jobs_locks" || infos[0]["server"] == "" {
		t.Fatalf("Info records after PrepareRead and Prepare: %v; want one naming database %s and collection jobs_locks, and the server", infos, db.Name())
	}
}
