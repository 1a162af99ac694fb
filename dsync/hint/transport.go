package hint

import (
	"cmp"
	"errors"
	"log/slog"
	"math"
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
	// endDefer is how long the end of a claim waits before it goes to
	// the waiters that told they need more ends than this one
	// (driver.Event.Need): it cannot let them hold, they only count it.
	// Sent with the next holder's, it woke their processes beside the
	// next holder's, which then took longer to read its turn on a
	// machine with few cores. Long enough for the next holder to have
	// read its turn in the store, short beside the time a process
	// holds: a need that was wrong (lost, stale, forged) costs a waiter
	// that could have held at most this, and never a grant, which only a
	// walk makes.
	endDefer = 3 * time.Millisecond
)

// send sends e as a hint: an announcement to every process recorded; an
// end to the processes that announced they wait for that very claim (the
// ones its end can let go next), or, if none did, to those that announced
// they wait for a claim of its key, or to every process if none did
// either; a Held to those that announced they wait for that claim (to
// none if none did). Best effort: a hint that cannot be sent is not. It
// returns to how many processes it was sent, or put off to (endDefer) on
// a socket that can send it: 0 if it cannot be sent.
func (f *Feed) send(e driver.Event) int {
	m := msg{key: e.Key, epoch: e.Epoch, proc: e.Proc, until: e.Until}
	switch e.Kind {
	case driver.Waiting:
		m.kind = kindWaiting
		m.need = uint32(min(e.Need, math.MaxUint32))
	case driver.Ended:
		m.kind = kindEnded
	case driver.Held:
		m.kind = kindHeld
	default:
		return 0
	}
	now := f.store.ServerTime()
	f.mu.Lock()
	var to []dest
	if m.kind == kindHeld {
		// Only to those that wait for that very claim: never broadcast.
		to = liveDests(f.waitingFor[claimID{e.Key, e.Epoch}], now.Earliest)
		f.mu.Unlock()
		return f.sendTo(m, to)
	}
	var later []dest
	if m.kind == kindEnded {
		to, later = f.endTargetsLocked(claimID{e.Key, e.Epoch}, now.Earliest)
	}
	if len(to)+len(later) == 0 {
		to = f.peerDestsLocked(now.Earliest)
	}
	deferred := 0
	if len(later) > 0 && f.conn != nil && f.key != nil && !f.stopped {
		// Counted as sent only on a socket that can send it: Publish
		// reports a hint none could take (errNotSent).
		d := &deferredEnd{m: m, to: later}
		f.deferred[d] = struct{}{}
		d.timer = time.AfterFunc(endDefer, func() { f.sendDeferred(d) })
		deferred = len(later)
	}
	f.mu.Unlock()
	return f.sendTo(m, to) + deferred
}

// deferredEnd is an end put off by endDefer: the hint, where it goes,
// and the timer that sends it.
type deferredEnd struct {
	m     msg
	to    []dest
	timer *time.Timer
}

// dest is where a hint goes: the receiver's peer ID, which the hint's
// MAC covers (wire.go), and the address it takes hints at.
type dest struct {
	id   string
	addr *net.UDPAddr
}

// sendDeferred sends d as its timer fires, unless the socket is closing
// (closeConn sent it then) or closed: nothing is sent, or logged, after.
func (f *Feed) sendDeferred(d *deferredEnd) {
	f.mu.Lock()
	if _, ok := f.deferred[d]; !ok || f.stopped {
		f.mu.Unlock()
		return
	}
	delete(f.deferred, d)
	f.deferring.Add(1)
	f.mu.Unlock()
	defer f.deferring.Done()
	f.sendTo(d.m, d.to)
}

// closeConn closes the socket, once the ends still put off by endDefer
// are sent: the feed stops as its Client closes, right after it ended
// its claims, or as a program that released exits, and a waiter that
// counts such an end would otherwise wait for its poll. Their sends
// under way are waited for; the timers that fire after do nothing.
func (f *Feed) closeConn() {
	f.mu.Lock()
	f.stopped = true
	var now []*deferredEnd
	for d := range f.deferred {
		d.timer.Stop()
		now = append(now, d)
	}
	clear(f.deferred)
	f.mu.Unlock()
	for _, d := range now {
		f.sendTo(d.m, d.to)
	}
	f.deferring.Wait()
	f.mu.Lock()
	if f.conn != nil {
		f.conn.Close()
	}
	f.mu.Unlock()
}

// endTargetsLocked returns where the end of claim k goes, at once (at)
// and after endDefer (later): the processes
// that announced they wait for k itself, whose waiters the end can let
// go (a Mutex's next holder; every reader behind a writer; every waiter
// of a Semaphore that passed k, see chain.Claim.WaitsFor). The other
// waiters of the key cannot go on that end: a hint to each would cost its
// process a wake-up and a MAC check at every release, and the next holder
// the CPU they took. If no process announced it waits for k (its
// announcement may have been lost), the end goes to those that wait for a
// claim of the key, as the next holder may be among them. Of the
// processes that wait for k, those whose latest Waiting for it told a
// need of more than one end (driver.Event.Need) get it later, the
// others (need 1, or not told: an older sender, a Mutex's waiter) at
// once. f.mu is held.
func (f *Feed) endTargetsLocked(k claimID, now time.Time) (at, later []dest) {
	ws := f.waitingFor[k]
	if len(liveDests(ws, now)) == 0 {
		return liveDests(f.interest[k.key], now), nil
	}
	soon, counting := make(map[string]waiter), make(map[string]waiter)
	for a, w := range ws {
		if w.need > 1 {
			counting[a] = w
		} else {
			soon[a] = w
		}
	}
	return liveDests(soon, now), liveDests(counting, now)
}

// liveDests returns the waiters in ws whose time has not passed at now,
// the earliest recorded first: those that queued first,
// whose walks passed a claim first, announce first, and the next holder
// is among them, so its hint goes out before the others' (a full
// Semaphore's end goes to every waiter that passed the claim, and with
// 4 waiting, written in the map's order, the next holder's came up to
// 0.5 ms after the first).
func liveDests(ws map[string]waiter, now time.Time) []dest {
	var live []waiter
	for _, w := range ws {
		if w.until.After(now) {
			live = append(live, w)
		}
	}
	slices.SortFunc(live, func(a, b waiter) int {
		return cmp.Or(a.since.Compare(b.since), cmp.Compare(a.addr.String(), b.addr.String()))
	})
	to := make([]dest, len(live))
	for i, w := range live {
		to[i] = w.dest()
	}
	return to
}

// peerDestsLocked returns the processes whose records hold at now. f.mu
// is held.
func (f *Feed) peerDestsLocked(now time.Time) []dest {
	var to []dest
	for id, p := range f.peersByID {
		if p.expires.After(now) {
			to = append(to, dest{id, p.addr})
		}
	}
	return to
}

// sendTo sends m to each of to, under this process's seq, sent time and
// address, each bound to its receiver, and returns to how many it was
// sent.
func (f *Feed) sendTo(m msg, to []dest) (sent int) {
	f.mu.Lock()
	conn, key := f.conn, f.key
	f.seq++
	m.seq, m.from, m.addr = f.seq, f.id, f.advertise
	f.mu.Unlock()
	if len(to) == 0 || conn == nil || key == nil {
		return 0
	}
	m.sent = f.store.ServerTime().Latest
	for _, d := range to {
		m.to = d.id
		b, err := encode(m, key)
		if err != nil {
			f.cfg.Logger.Debug("dsync: hint not sent", slog.String("key", m.key), slog.Any("err", err))
			return sent
		}
		if _, err := conn.WriteTo(b, d.addr); err != nil {
			f.cfg.Logger.Debug("dsync: hint not sent", slog.String("to", d.addr.String()), slog.Any("err", err))
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
	m, err := decode(b, key, f.id)
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
	case kindNext:
		if f.noteNext(m) {
			return // a need told again: nothing new for the handler
		}
		// Its Waiting did not come (yet): it stands for it.
		m.kind = kindWaiting
		f.noteInterest(m.key, m.epoch, m.addr, m.until, told{from: m.from, seq: m.seq})
	case kindWaiting:
		f.noteInterest(m.key, m.epoch, m.addr, m.until, told{m.from, m.seq, m.need})
	case kindHeld:
		f.noteOwner(claimID{m.key, m.epoch}, m.from, addr)
	case kindHello:
		// Answered, so that a process that just started learns at once
		// that hints reach it (pause.go). A welcome is not answered.
		if addr != nil {
			f.sendTo(msg{kind: kindWelcome}, []dest{{m.from, addr}})
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
// where it takes hints, and until when (store time). Its peer ID is the
// sender of its latest Waiting (told.from).
type waiter struct {
	addr  *net.UDPAddr
	until time.Time
	// since: when it was first recorded there (store time), while it
	// held: ends and Held hints go to the earliest first (liveAddrs).
	since time.Time
	told
}

// told is what a waiter's latest Waiting told (endTargetsLocked): its
// need (0: not told), and the sender and seq of that Waiting, so that a
// Waiting that arrives after a later one of the same sender does not
// undo what that one told.
type told struct {
	from string
	seq  uint64
	need uint32
}

// claimID names a claim: a key's epoch.
type claimID struct {
	key   string
	epoch uint64
}

// noteInterest records that the process at addr waits for the claim of
// key's epoch, until until (at most interestFor), as its Waiting t told.
func (f *Feed) noteInterest(key string, epoch uint64, addr string, until time.Time, t told) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return
	}
	now := f.store.ServerTime().Earliest
	until = minTime(until, now.Add(interestFor))
	f.mu.Lock()
	defer f.mu.Unlock()
	w := waiter{addr: ua, until: until, since: now, told: t}
	noteWaiter(f.interest, key, addr, w, now)
	// The claim's owner sends its Held hints there (dsync/internal/wake's held.go).
	noteWaiter(f.waitingFor, claimID{key, epoch}, addr, w, now)
}

// noteNext records that the waiter that sent m, a kindNext, needs only
// the end of m's claim now, and reports whether it had a record of its
// Waiting for that claim (if not, m is taken as that Waiting).
func (f *Feed) noteNext(m msg) bool {
	now := f.store.ServerTime().Earliest
	f.mu.Lock()
	defer f.mu.Unlock()
	k := claimID{m.key, m.epoch}
	w, ok := f.waitingFor[k][m.addr]
	if !ok || !w.until.After(now) {
		return false
	}
	if w.from != m.from || w.seq < m.seq {
		w.told = told{from: m.from, seq: m.seq}
		f.waitingFor[k][m.addr] = w
	}
	return true
}

// noteOwner records that the owner of claim k, the process from which
// sent a Held hint about it, takes hints at addr (Tell), for as long as
// an announcement is kept (interestFor). A full record of owners
// (maxInterest) is rid of the lapsed, then emptied if that is not
// enough.
func (f *Feed) noteOwner(k claimID, from string, addr *net.UDPAddr) {
	if addr == nil {
		return
	}
	now := f.store.ServerTime().Earliest
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.owners) >= maxInterest {
		for k, o := range f.owners {
			if !o.until.After(now) {
				delete(f.owners, k)
			}
		}
		if len(f.owners) >= maxInterest {
			clear(f.owners)
		}
	}
	f.owners[k] = waiter{addr: addr, until: now.Add(interestFor), since: now, told: told{from: from}}
}

// noteWaiter records w, the process at addr, under k in m: until the
// later of its until and that of the record it finds there, since the
// earlier of their since (if that record still holds), and what the
// later of their Waitings told (by the sender's seq; w's if the senders
// differ). A full m (maxInterest entries) is rid
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
	if ok && old.until.After(now) {
		if old.since.Before(w.since) {
			w.since = old.since
		}
		if old.until.After(w.until) {
			w.until = old.until
		}
		if old.from == w.from && old.seq > w.seq {
			w.told = old.told // w came late
		}
	}
	m[k][addr] = w
}

// dest is where hints to w go.
func (w waiter) dest() dest { return dest{w.from, w.addr} }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
