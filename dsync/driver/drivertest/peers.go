package drivertest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testPeers: a store's Roles.Peers agrees on one hint key however many
// processes race to record theirs, and keeps it; it records peers,
// replaces a peer's record, and lists those not expired, apart from the
// sessions. A store without the role skips it.
func (s *suite) testPeers(t *testing.T) {
	st, ctx := s.store(t)
	ps := need(t, st.Roles().Peers, "Peers")
	// Sessions beside the records, which must not be listed as peers, nor
	// read as generations of a session.
	sessExp := expiry(st, time.Minute)
	insertSession(t, ctx, st, sessionID(1), 0, sessExp)

	const racers = 8
	keys := make([][]byte, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			k, err := ps.HintKey(ctx, bytes.Repeat([]byte{byte(i + 1)}, 32))
			if err != nil {
				t.Errorf("HintKey: %v", err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for i, k := range keys {
		if len(k) != 32 || !bytes.Equal(k, keys[0]) {
			t.Fatalf("HintKey of racer %d = %x, of racer 0 %x: want one key of 32 bytes", i, k, keys[0])
		}
	}
	if k, err := ps.HintKey(ctx, bytes.Repeat([]byte{99}, 32)); err != nil || !bytes.Equal(k, keys[0]) {
		t.Errorf("HintKey later = %x, %v; want the key recorded, %x", k, err, keys[0])
	}

	exp := expiry(st, time.Minute)
	put := func(p driver.Peer) {
		t.Helper()
		if err := ps.PutPeer(ctx, p); err != nil {
			t.Fatalf("PutPeer(%+v): %v", p, err)
		}
	}
	put(driver.Peer{ID: "p1", Addr: "10.0.0.1:7000", ExpiresAt: exp})
	put(driver.Peer{ID: "p2", Addr: "10.0.0.2:7000", ExpiresAt: exp})
	put(driver.Peer{ID: "p2", Addr: "10.0.0.2:7001", ExpiresAt: exp.Add(time.Second)})
	put(driver.Peer{ID: "gone", Addr: "10.0.0.3:7000", ExpiresAt: expiry(st, -time.Minute)})
	list, err := ps.Peers(ctx, st.ServerTime().Latest)
	if err != nil {
		t.Fatalf("Peers: %v", err)
	}
	got := map[string]string{}
	for _, p := range list {
		got[p.ID] = fmt.Sprintf("%s until %v", p.Addr, p.ExpiresAt.UTC())
	}
	want := map[string]string{
		"p1": fmt.Sprintf("10.0.0.1:7000 until %v", exp.UTC()),
		"p2": fmt.Sprintf("10.0.0.2:7001 until %v", exp.Add(time.Second).UTC()),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Peers = %v, want %v", got, want)
	}
	checkSession(t, ctx, st, sessionID(1), 0, sessExp)
}
