package apisim

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestDeadlineFromExpiry: a renewal whose update of its generation failed
// inserts the next generation with the expiry it computed before the
// first attempt; the oracle's deadline counts from that computation (at
// most the expiry minus the TTL), not from the insert's send. Seen in the
// simulation with contrib/gocron's Locker: the expiry 3.565 computed at
// about 2.065, the insert sent at 2.357; the oracle said 3.782, and
// judged another process's hold from 3.58 valid beside this one.
//
// In a bubble: the replies come at its start, t0, before the deadlines.
func TestDeadlineFromExpiry(t *testing.T) { synctest.Test(t, testDeadlineFromExpiry) }

func testDeadlineFromExpiry(t *testing.T) {
	w := newWorld(1)
	ttl := 1500 * time.Millisecond
	p := newProc(w, 0, procConfig{TTL: ttl})
	opened, sent, expires := at(1066), at(2357), at(3565)
	w.confirmed(p, "s", opened, opened.Add(ttl))
	w.confirmed(p, "s", sent, expires)
	if got, want := p.leases["s"].expiry(), expires.Add(-ttl/20); !got.Equal(want) {
		t.Errorf("deadline %v, want %v (the expiry minus the margin)", got.Format(tf), want.Format(tf))
	}
	// A request that carried an expiry computed as it was sent: counted
	// from its send, as before.
	w.confirmed(p, "r", sent, sent.Add(ttl+time.Millisecond))
	if got, want := p.leases["r"].expiry(), sent.Add(ttl-ttl/20); !got.Equal(want) {
		t.Errorf("deadline %v, want %v (the send plus the TTL minus the margin)", got.Format(tf), want.Format(tf))
	}
}

// TestClaimAt: a hold or run relies on the last of its process's claims
// of its key and token to land at or before it began, not on one that
// landed later (an insert held back from before an emptying, landing
// after it with the same epoch: apisim seed 325, a Once's Do matched
// with an older session's claim and judged past its deadline).
func TestClaimAt(t *testing.T) {
	k := claimKey{"dsync:once/o", 7}
	p := newProc(nil, 0, procConfig{TTL: time.Second})
	p.claims[k] = []claimRec{{session: "first", at: at(100)}, {session: "held-back", at: at(500)}}
	for _, c := range []struct {
		name  string
		begin int
		want  string // "": none
	}{
		{"before any landed", 50, ""},
		{"as the first landed", 100, "first"},
		{"before the late one landed", 300, "first"},
		{"after the late one landed", 600, "held-back"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := p.claimAt(k, at(c.begin))
			if !ok && c.want != "" || ok && got.session != c.want {
				t.Errorf("claimAt(%v) = %q, %v; want %q", at(c.begin).Format(tf), got.session, ok, c.want)
			}
		})
	}
	if _, ok := p.claimAt(claimKey{"dsync:once/o", 8}, at(600)); ok {
		t.Error("claimAt found a claim of a token never claimed")
	}
}
