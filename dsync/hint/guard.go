package hint

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The guard: what a hint that passed its MAC must still pass before it
// is acted upon. Its MAC binds it to this process (wire.go), so a hint
// recorded on its way to another process is never taken here. A hint
// sent too long ago (or too far ahead) is dropped, so one recorded on
// the network cannot be played again later; one seen already (the same
// sender and seq), taken or refused over the rate, is dropped, so one
// played again soon after is not taken twice, nor taken once tokens
// came back (as is one older than the last windowLen seqs of its
// sender: a sender's seqs only grow); and past a rate, hints are
// dropped, so that no flood of hints, forged under a stolen key or
// valid, makes this process look at the store more than a bounded
// number of times a second.
//
// What someone without the key can make this process spend: a MAC check
// per datagram (a forgery, or a hint meant for another process, fails
// it), and a lookup per hint played again (dropped before the rate is
// counted). Neither takes a token: only a hint this process was sent and
// has not seen can, once, so playing hints again cannot crowd out the
// real ones.

const (
	// maxAge is how far a hint's sent time may lie from the receiver's
	// estimate of the store's time (both estimates carry their error).
	maxAge = 10 * time.Second
	// windowLen is how many of a sender's seqs, up to the highest seen,
	// are remembered one by one: an older hint (one that a datagram
	// overtook by as many of its sender's hints) is taken as seen.
	windowLen = 1024
	// maxSenders bounds the senders remembered; past it, the senders
	// whose latest hint is older than maxAge are forgotten (their hints
	// are all too old to be taken), and while none is, a hint from a
	// sender not remembered is dropped.
	maxSenders = 4096
)

// guard decides which authenticated hints are acted upon. It is safe for
// concurrent use.
type guard struct {
	now  func() driver.Interval // the store's time
	mono func() time.Duration   // local monotonic time
	rate float64                // hints taken per second, at most, on average
	cap  float64                // and at once (the bucket's size)

	refused, taken atomic.Uint64 // what admit decided (Stats)

	mu     sync.Mutex
	seen   map[string]*window // by sender: the hints seen lately, taken or not
	tokens float64
	filled time.Duration // when tokens was last filled (mono)
}

func newGuard(now func() driver.Interval, mono func() time.Duration, rate float64, burst int) *guard {
	return &guard{now: now, mono: mono, rate: rate, cap: float64(burst), tokens: float64(burst), filled: mono(), seen: make(map[string]*window)}
}

// admit reports whether m is acted upon, and takes a token if so.
func (g *guard) admit(m msg) bool {
	if !g.check(m) {
		g.refused.Add(1)
		return false
	}
	g.taken.Add(1)
	return true
}

// check is admit, uncounted.
func (g *guard) check(m msg) bool {
	now := g.now()
	if m.sent.Before(now.Earliest.Add(-maxAge)) || m.sent.After(now.Latest.Add(maxAge)) {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.seen[m.from]
	if w == nil {
		if len(g.seen) >= maxSenders {
			for from, w := range g.seen {
				if w.latest.Before(now.Earliest.Add(-maxAge)) {
					delete(g.seen, from)
				}
			}
			if len(g.seen) >= maxSenders {
				return false
			}
		}
		w = &window{}
		g.seen[m.from] = w
	}
	// Remembered whether or not it is taken: refused over the rate, it
	// must not be taken when played again once tokens came back.
	if !w.see(m.seq, m.sent) {
		return false
	}
	mono := g.mono()
	g.tokens = min(g.cap, g.tokens+g.rate*(mono-g.filled).Seconds())
	g.filled = mono
	if g.tokens < 1 {
		return false
	}
	g.tokens--
	return true
}

// window is what the guard remembers of one sender's hints (as an IPsec
// receiver does of sequence numbers, RFC 4303): the highest seq seen,
// which of the windowLen seqs up to it were seen, and the latest sent
// time among them.
type window struct {
	top    uint64
	bits   [windowLen / 64]uint64 // bit i: seq top-i was seen
	latest time.Time
}

// see marks seq, sent at sent, as seen, and reports whether it was not
// before (nor below the window).
func (w *window) see(seq uint64, sent time.Time) bool {
	if seq > w.top {
		w.shift(seq - w.top)
		w.top = seq
	} else if w.top-seq >= windowLen {
		return false
	}
	d := w.top - seq
	word, bit := d/64, uint64(1)<<(d%64)
	if w.bits[word]&bit != 0 {
		return false
	}
	w.bits[word] |= bit
	if sent.After(w.latest) {
		w.latest = sent
	}
	return true
}

// shift moves the window up by d seqs: bit i becomes bit i+d.
func (w *window) shift(d uint64) {
	n := uint64(len(w.bits))
	if d >= 64*n {
		clear(w.bits[:])
		return
	}
	words, bits := d/64, d%64
	for k := n - 1; k < n; k-- { // down to 0; k wraps past it
		var v uint64
		if k >= words {
			v = w.bits[k-words] << bits
			if bits > 0 && k >= words+1 {
				v |= w.bits[k-words-1] >> (64 - bits)
			}
		}
		w.bits[k] = v
	}
}
