package apisim

import (
	"testing"
	"time"
)

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

// TestLeaseDeadline: a confirmation sets the deadline its send time
// gives, unless the expiry it carried is earlier (an insert of the next
// generation, sent after the renewal whose expiry it carries: apisim
// seed 133, the oracle trusting a session past the store's expiry).
func TestLeaseDeadline(t *testing.T) {
	l := &leaseLog{ttl: 600 * time.Millisecond}
	for _, c := range []struct {
		name          string
		sent, expires int
		want          int
	}{
		{"a renewal", 1000, 1600, 1570},
		{"an expiry raised past the send time's", 1000, 1700, 1570},
		{"the next generation, sent late", 1117, 1600, 1570},
	} {
		if got := l.deadline(at(c.sent), at(c.expires)); !got.Equal(at(c.want)) {
			t.Errorf("%s: deadline(%d, %d) = %v, want %v", c.name, c.sent, c.expires, got.Format(tf), at(c.want).Format(tf))
		}
	}
}
