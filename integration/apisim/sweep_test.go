package apisim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestSweepWithShortSpan checks that a Client with an idle age compacts
// an idle key in the background (ClientWithIdleAge: "this Client sweep[s]
// in the background, about once per bucket span: it compacts the keys
// idle ... for at least d"), with a bucket span under the default TTL.
//
// Found by the simulation's figures (no document was ever compacted):
// sweepOnce took its sweep lock with a Mutex of the default TTL (15 s),
// which NewMutex refused when the store's span was shorter, and the error
// was dropped, so a Client whose span was under 15 s never swept. The
// lease is the Client's now (dsync.ClientWithTTL), checked against the span
// when the Client is made, and the sweep lock runs on it.
func TestSweepWithShortSpan(t *testing.T) {
	const span = 4 * time.Second
	var before, after int
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		b, err := dsync.NewClient(st, dsync.ClientWithBucketSpan(span), dsync.ClientWithIdleAge(4*span), dsync.ClientWithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		m, err := dsync.NewMutex(b, "k")
		if err != nil {
			t.Fatal(err)
		}
		m.Lock()
		//lint:ignore SA2001 a dsync lock taken and released at once: the test wants its documents
		m.Unlock()
		before = docsOf(st, "k")
		time.Sleep(20 * span)
		after = docsOf(st, "k")
	})
	if before == 0 || after != 0 {
		t.Errorf("with a %v bucket span, key k had %d documents before and %d after 20 spans of background sweeps: the Client did not compact it", span, before, after)
	}
}

// docsOf counts the documents of key in st (the sweep lock's own, in
// another key, stay: that key is in use).
func docsOf(st *memory.Store, key string) int {
	n := 0
	st.Each(func(k string) {
		if k == key {
			n++
		}
	})
	return n
}
