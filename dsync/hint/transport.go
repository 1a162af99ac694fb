package hint

import (
	"cmp"
	"errors"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Sending and receiving hints: where each event goes, and what a hint
// received does.

const (
	// maxPeers and maxInterest bound what is kept of other processes
	// (past them, expired entries are dropped, then all: a process
	// forgotten is read again from the store, or broadcast to).
	maxPeers    = 4096
	maxInterest = 8192
	// interestFor caps how long a process is kept as waiting for a key's
	// claims after it announced it.
	interestFor = 10 * time.Minute
)

// send sends e as a hint: an announcement to every process recorded; an
// end to the processes that announced they wait for that very claim (the
// ones its end can let go next), or, if none did, to those that announced
// they wait for a claim of its key, or to every process if none did
// either; a Held to those that announced they wait for that claim (to
// none if none did). Best effort: a hint that cannot be sent is not. It
// returns to how many processes it was sent.
func (f *Feed) send(e driver.Event) int {
	m := msg{key: e.Key, epoch: e.Epoch, proc: e.Proc, until: e.Until}
	switch e.Kind {
	case driver.Waiting:
		m.kind = kindWaiting
	case driver.Ended:
		m.kind = kindEnded
	case driver.Held:
		m.kind = kindHeld
	default:
		return 0
	}
	now := f.store.ServerTime()
	f.mu.Lock()
	var to []*net.UDPAddr
	if m.kind == kindHeld {
		// Only to those that wait for that very claim: never broadcast.
		to = liveAddrs(f.waitingFor[claimID{e.Key, e.Epoch}], now.Earliest)
		f.mu.Unlock()
		return f.sendTo(m, to)
	}
	if m.kind == kindEnded {
		to = f.endTargetsLocked(claimID{e.Key, e.Epoch}, now.Earliest)
	}
	if len(to) == 0 {
		to = f.peerAddrsLocked(now.Earliest)
	}
	f.mu.Unlock()
	return f.sendTo(m, to)
}

// endTargetsLocked returns where the end of claim k goes: the processes
// that announced they wait for k itself, whose waiters the end can let
// go (a Mutex's next holder; every reader behind a writer; every waiter
// of a Semaphore that passed k, see chain.Claim.WaitsFor). The other
// waiters of the key cannot go on that end: a hint to each would cost its
// process a wake-up and a MAC check at every release, and the next holder
// the CPU they took. If no process announced it waits for k (its
// announcement may have been lost), the end goes to those that wait for a
// claim of the key, as the next holder may be among them. f.mu is held.
func (f *Feed) endTargetsLocked(k claimID, now time.Time) []*net.UDPAddr {
	if to := liveAddrs(f.waitingFor[k], now); len(to) > 0 {
		return to
	}
	return liveAddrs(f.interest[k.key], now)
}

// liveAddrs returns the addresses of the waiters in ws whose time has not
// passed at now, the earliest recorded first: those that queued first,
// whose walks passed a claim first, announce first, and the next holder
// is among them, so its hint goes out before the others' (a full
// Semaphore's end goes to every waiter that passed the claim, and with
// 4 waiting, written in the map's order, the next holder's came up to
// 0.5 ms after the first).
func liveAddrs(ws map[string]waiter, now time.Time) []*net.UDPAddr {
	var live []waiter
	for _, w := range ws {
		if w.until.After(now) {
			live = append(live, w)
		}
	}
	slices.SortFunc(live, func(a, b waiter) int {
		return cmp.Or(a.since.Compare(b.since), cmp.Compare(a.addr.String(), b.addr.String()))
	})
	to := make([]*net.UDPAddr, len(live))
	for i, w := range live {
		to[i] = w.addr
	}
	return to
}

// peerAddrsLocked returns the addresses of the processes whose records
// hold at now. f.mu is held.
func (f *Feed) peerAddrsLocked(now time.Time) []*net.UDPAddr {
	var to []*net.UDPAddr
	for _, p := range f.peersByID {
		if p.expires.After(now) {
			to = append(to, p.addr)
		}
	}
	return to
}

// sendTo sends m to each of to, under this process's seq, sent time and
// address, and returns to how many it was sent.
func (f *Feed) sendTo(m msg, to []*net.UDPAddr) (sent int) {
	f.mu.Lock()
	conn, key := f.conn, f.key
	f.seq++
	m.seq, m.from, m.addr = f.seq, f.id, f.advertise
	f.mu.Unlock()
	if len(to) == 0 || conn == nil || key == nil {
		return 0
	}
	m.sent = f.store.ServerTime().Latest
	b, err := encode(m, key)
	if err != nil {
		f.cfg.Logger.Debug("dsync: hint not sent", slog.String("key", m.key), slog.Any("err", err))
		return 0
	}
	for _, addr := range to {
		if _, err := conn.WriteTo(b, addr); err != nil {
			f.cfg.Logger.Debug("dsync: hint not sent", slog.String("to", addr.String()), slog.Any("err", err))
			continue
		}
		sent++
	}
	f.counts.sent.Add(uint64(sent))
	return sent
}

// receive reads hints until the socket is closed.
func (f *Feed) receive() {
	f.mu.Lock()
	conn := f.conn
	f.mu.Unlock()
	buf := make([]byte, maxDatagram+1)
	for {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		f.counts.received.Add(1)
		if n > maxDatagram {
			f.counts.rejected.Add(1)
			continue
		}
		f.take(buf[:n])
	}
}

// take acts upon one datagram: it checks its MAC and its guard, and
// records its sender or hands its event to the handler.
func (f *Feed) take(b []byte) {
	f.mu.Lock()
	key := f.key
	f.mu.Unlock()
	if key == nil {
		f.counts.rejected.Add(1)
		return // not yet read from the store: nothing can be checked
	}
	m, err := decode(b, key)
	if err != nil {
		f.counts.rejected.Add(1)
		return
	}
	if m.from == f.id {
		return
	}
	if !f.guard.admit(m) {
		f.cfg.Logger.Debug("dsync: hint dropped (too old, taken already, or over the rate)", slog.String("from", m.from))
		return
	}
	f.heard()
	addr := f.notePeer(m.from, m.addr)
	switch m.kind {
	case kindWaiting:
		f.noteInterest(m.key, m.epoch, m.addr, m.until)
	case kindHello:
		// Answered, so that a process that just started learns at once
		// that hints reach it (pause.go). A welcome is not answered.
		if addr != nil {
			f.sendTo(msg{kind: kindWelcome}, []*net.UDPAddr{addr})
		}
	}
	if e, ok := m.event(); ok {
		f.counts.endArrived(e, true)
		f.deliver(func(h driver.FeedHandler) { h.Event(e) })
	}
}

// notePeer records that the process from takes hints at addr, for as
// long as a record in the store would hold, and returns addr resolved
// (nil if it is not an address).
func (f *Feed) notePeer(from, addr string) *net.UDPAddr {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil || from == "" {
		return nil
	}
	now := f.store.ServerTime()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.peersByID) >= maxPeers {
		for id, p := range f.peersByID {
			if !p.expires.After(now.Earliest) {
				delete(f.peersByID, id)
			}
		}
		if len(f.peersByID) >= maxPeers {
			clear(f.peersByID)
		}
	}
	f.peersByID[from] = peer{addr: ua, expires: now.Earliest.Add(recordFor)}
	return ua
}

// waiter is a process that announced it waits for a claim of a key:
// where it takes hints, and until when (store time).
type waiter struct {
	addr  *net.UDPAddr
	until time.Time
	// since: when it was first recorded there (store time), while it
	// held: ends and Held hints go to the earliest first (liveAddrs).
	since time.Time
}

// claimID names a claim: a key's epoch.
type claimID struct {
	key   string
	epoch uint64
}

// noteInterest records that the process at addr waits for the claim of
// key's epoch, until until (at most interestFor).
func (f *Feed) noteInterest(key string, epoch uint64, addr string, until time.Time) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return
	}
	now := f.store.ServerTime().Earliest
	until = minTime(until, now.Add(interestFor))
	f.mu.Lock()
	defer f.mu.Unlock()
	noteWaiter(f.interest, key, addr, waiter{ua, until, now}, now)
	// The claim's owner sends its Held hints there (dsync/wake_held.go).
	noteWaiter(f.waitingFor, claimID{key, epoch}, addr, waiter{ua, until, now}, now)
}

// noteWaiter records w, the process at addr, under k in m, unless it
// already holds there for longer. A full m (maxInterest entries) is rid
// of the waiters whose time has passed first, and emptied if that is
// not enough.
func noteWaiter[K comparable](m map[K]map[string]waiter, k K, addr string, w waiter, now time.Time) {
	if len(m) >= maxInterest {
		for k, ws := range m {
			for a, w := range ws {
				if !w.until.After(now) {
					delete(ws, a)
				}
			}
			if len(ws) == 0 {
				delete(m, k)
			}
		}
		if len(m) >= maxInterest {
			clear(m)
		}
	}
	if m[k] == nil {
		m[k] = make(map[string]waiter)
	}
	old, ok := m[k][addr]
	if ok && old.until.After(now) && old.since.Before(w.since) {
		w.since = old.since
	}
	if w.until.After(old.until) {
		m[k][addr] = w
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
