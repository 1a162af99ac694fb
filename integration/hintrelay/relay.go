// Package hintrelay is a UDP relay on loopback that stands in front of a
// process's direct-hint socket (package dsync/hint) and does to the hints
// sent to it what a network and an attacker can: it drops some, sends
// some twice, holds some back while later ones pass (so they arrive late
// and out of order), and beside the hints it passes on it sends forged
// ones (a hint's body under another key, or altered under its own MAC),
// replays of hints it passed earlier, and random bytes.
//
// A process advertises the relay's address (hint.Config.Advertise) and
// listens on the address the relay sends to, so every hint other
// processes send it goes through the relay. The relay knows of the hint
// wire format only that a datagram ends with its 32-byte MAC.
package hintrelay

import (
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Faults are the chances, per datagram passed on, of each fault.
type Faults struct {
	Drop      float64 // not passed on
	Duplicate float64 // passed on twice
	Delay     float64 // held back for up to MaxDelay, while later ones pass
	MaxDelay  time.Duration
	// Beside the datagram: a forgery of it (another key, or its body
	// altered), a datagram passed on earlier sent again (at least
	// ReplayAge old if one is), random bytes.
	Forge, Replay, Garbage float64
	ReplayAge              time.Duration
}

// Default are the faults of the integration suite: a hint in two meets
// one of them, yet most still arrive soon enough to wake their waiter.
var Default = Faults{
	Drop: 0.1, Duplicate: 0.1, Delay: 0.1, MaxDelay: 300 * time.Millisecond,
	Forge: 0.1, Replay: 0.1, Garbage: 0.05, ReplayAge: time.Second,
}

// Counts are what a Relay did.
type Counts struct {
	Received, Passed             int64 // datagrams to relay; sent on (once or more, now or late)
	Dropped, Duplicated, Delayed int64
	// Overtaken: delayed datagrams that arrived after one received later.
	Overtaken                 int64
	Forged, Replayed, Garbage int64
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Received += o.Received
	c.Passed += o.Passed
	c.Dropped += o.Dropped
	c.Duplicated += o.Duplicated
	c.Delayed += o.Delayed
	c.Overtaken += o.Overtaken
	c.Forged += o.Forged
	c.Replayed += o.Replayed
	c.Garbage += o.Garbage
}

const macLen = sha256.Size

// Relay passes datagrams received on Addr to a target, with Faults.
type Relay struct {
	in, out *net.UDPConn
	to      *net.UDPAddr

	received, passed, dropped, duplicated, delayed atomic.Int64
	overtaken, forged, replayed, garbage           atomic.Int64
	// sentNow counts the datagrams passed on at once: a delayed one
	// passed on after it grew was overtaken.
	sentNow atomic.Int64

	mu     sync.Mutex
	faults Faults
	recent []sent // the last datagrams passed on, for replays
	wg     sync.WaitGroup
}

// sent is a datagram passed on, and when.
type sent struct {
	b  []byte
	at time.Time
}

const keepRecent = 64

// New starts a Relay on a free loopback port that sends what it receives
// to to (host:port), with faults f.
func New(to string, f Faults) (*Relay, error) {
	ta, err := net.ResolveUDPAddr("udp", to)
	if err != nil {
		return nil, err
	}
	in, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	out, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		in.Close()
		return nil, err
	}
	r := &Relay{in: in, out: out, to: ta, faults: f}
	r.wg.Add(1)
	go r.run()
	return r, nil
}

// SetFaults replaces the Relay's faults, from the next datagram on.
func (r *Relay) SetFaults(f Faults) {
	r.mu.Lock()
	r.faults = f
	r.mu.Unlock()
}

// Addr is where the Relay receives.
func (r *Relay) Addr() string { return r.in.LocalAddr().String() }

// Close stops the Relay, once the datagrams it holds back are sent.
func (r *Relay) Close() {
	r.in.Close()
	r.wg.Wait()
	r.out.Close()
}

// Counts returns what the Relay did so far.
func (r *Relay) Counts() Counts {
	return Counts{
		Received: r.received.Load(), Passed: r.passed.Load(), Dropped: r.dropped.Load(),
		Duplicated: r.duplicated.Load(), Delayed: r.delayed.Load(), Overtaken: r.overtaken.Load(),
		Forged: r.forged.Load(), Replayed: r.replayed.Load(), Garbage: r.garbage.Load(),
	}
}

func (r *Relay) run() {
	defer r.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		n, _, err := r.in.ReadFromUDP(buf)
		if err != nil {
			return // closed
		}
		r.received.Add(1)
		r.relay(append([]byte(nil), buf[:n]...))
	}
}

// chance reports true with probability p.
func chance(p float64) bool { return p > 0 && rand.Float64() < p }

// relay passes b on, with its faults, and sends forgeries beside it.
func (r *Relay) relay(b []byte) {
	r.mu.Lock()
	f := r.faults
	r.mu.Unlock()
	switch {
	case chance(f.Forge):
		r.forged.Add(1)
		r.send(forge(b))
	case chance(f.Replay):
		if old := r.old(); old != nil {
			r.replayed.Add(1)
			r.send(old)
		}
	case chance(f.Garbage):
		r.garbage.Add(1)
		r.send(garbage())
	}
	if chance(f.Drop) {
		r.dropped.Add(1)
		return
	}
	// Counted before it is sent: a test that has read it sees it counted.
	r.passed.Add(1)
	switch {
	case chance(f.Duplicate):
		r.duplicated.Add(1)
		r.send(b)
		r.send(b)
		r.sentNow.Add(1)
	case chance(f.Delay) && f.MaxDelay > 0:
		r.delayed.Add(1)
		r.wg.Add(1)
		before := r.sentNow.Load()
		time.AfterFunc(rand.N(f.MaxDelay), func() {
			defer r.wg.Done()
			if r.sentNow.Load() > before {
				r.overtaken.Add(1) // counted before it is sent: it is when it arrives
			}
			r.send(b)
		})
	default:
		r.send(b)
		r.sentNow.Add(1)
	}
	r.mu.Lock()
	r.recent = append(r.recent, sent{b, time.Now()})
	if len(r.recent) > keepRecent {
		r.recent = r.recent[1:]
	}
	r.mu.Unlock()
}

func (r *Relay) send(b []byte) { _, _ = r.out.WriteToUDP(b, r.to) }

// old returns a datagram passed on at least ReplayAge ago, or the oldest
// kept, or nil.
func (r *Relay) old() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recent) == 0 {
		return nil
	}
	cut := time.Now().Add(-r.faults.ReplayAge)
	var old []sent
	for _, s := range r.recent {
		if s.at.Before(cut) {
			old = append(old, s)
		}
	}
	if len(old) == 0 {
		return r.recent[0].b
	}
	return old[rand.IntN(len(old))].b
}

// forge returns b's body with a byte changed, either under its own MAC
// or under a MAC of a random key: what someone without the store's key
// can make of a hint it saw.
func forge(b []byte) []byte {
	if len(b) <= macLen {
		return garbage()
	}
	f := append([]byte(nil), b...)
	body := f[:len(f)-macLen]
	body[rand.IntN(len(body))] ^= byte(1 + rand.IntN(255))
	if rand.IntN(2) == 0 {
		return f // altered under the original MAC
	}
	key := make([]byte, 32)
	_, _ = crand.Read(key)
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return mac.Sum(body[:len(body):len(body)])
}

// garbage returns random bytes, half the time after the hints' magic.
func garbage() []byte {
	b := make([]byte, 1+rand.IntN(200))
	_, _ = crand.Read(b)
	if rand.IntN(2) == 0 {
		b = append([]byte("dsh2"), b...)
	}
	return b
}
