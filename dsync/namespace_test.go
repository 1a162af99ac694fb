package dsync_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/statuspage"
)

// TestNamespaceRefusedWhenItWouldAlias: a namespace whose keys would be
// another primitive's (dsync's own namespaces) or another namespace's
// (one with "/") is refused when the Mutex is made, with an error that
// names it and says why; any other is taken, and keeps its keys apart.
func TestNamespaceRefusedWhenItWouldAlias(t *testing.T) {
	mem := dsync.NewMemClient()
	defer mem.Close()
	for _, c := range []struct {
		ns, why string
	}{
		{"rw", "RWMutexes' keys"},
		{"sem", "Semaphores' keys"},
		{"once", "Onces' keys"},
		{"election", "package leader's election leases' keys"},
		{"sweep", "compaction lock's keys"},
		{"jobs/nightly", `may not contain "/", which ends it in a stored key (dsync:NS/KEY): its keys would be those of the namespace "jobs"`},
		{"/", `may not contain "/"`},
		{"rw/", `may not contain "/"`},
	} {
		m, err := dsync.NewMutex(mem.Client, "k", dsync.WithNamespace(c.ns))
		if err == nil || m != nil || !strings.Contains(err.Error(), "WithNamespace("+strconv.Quote(c.ns)+")") || !strings.Contains(err.Error(), c.why) {
			t.Errorf("NewMutex in the namespace %q: error %v (a Mutex made: %v); want an error naming it and saying %q", c.ns, err, m != nil, c.why)
		}
	}

	// Another namespace is taken: its keys are its own.
	for _, ns := range []string{"jobs", "gocron", "RW", "dsync:rw"} {
		m, err := dsync.NewMutex(mem.Client, "k", dsync.WithNamespace(ns), quiet)
		if err != nil {
			t.Errorf("NewMutex in the namespace %q: %v; want it made", ns, err)
			continue
		}
		if err := m.TryLockContext(context.Background()); err != nil {
			t.Errorf("TryLock in the namespace %q: %v", ns, err)
			continue
		}
		q, err := statuspage.NewReader(mem.Client).Queue(context.Background(), "dsync:"+ns+"/k")
		if err != nil || len(q) != 1 || q[0].Owner != dsync.Owner(m) {
			t.Errorf("queue of dsync:%s/k: %+v, %v; want the Mutex's claim alone", ns, q, err)
		}
		m.Unlock()
	}
}
