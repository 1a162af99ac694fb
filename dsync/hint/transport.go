package hint

import (
	"cmp"
	"log/slog"
	"math"
	"net"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Sending hints: where each event goes (receive.go: what a hint received
// does). The bounds below hold on both sides.

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
	if m.kind == kindWaiting {
		f.noteWaitingLocked(m)
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
// of a Semaphore that passed k, see queue.Claim.WaitsFor). The other
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
	body, err := encodeBody(m)
	if err != nil {
		f.cfg.Logger.Debug("dsync: hint not sent", slog.String("key", m.key), slog.Any("err", err))
		return 0
	}
	for _, d := range to {
		b, err := seal(body, d.id, key)
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
