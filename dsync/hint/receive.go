package hint

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Receiving hints: what a hint received does, and what is kept of the
// processes that wait for a claim.

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
	addr, learnt := f.notePeer(m.from, m.addr)
	if learnt {
		f.greet([]dest{{m.from, addr}})
	}
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
// (nil if it is not an address), and whether this process just learnt of
// it (it had no record of it in force: newpeer.go).
func (f *Feed) notePeer(from, addr string) (_ *net.UDPAddr, learnt bool) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil || from == "" {
		return nil, false
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
	learnt = !f.knowsLocked(from, now.Earliest)
	f.peersByID[from] = peer{addr: ua, expires: now.Earliest.Add(recordFor)}
	return ua, learnt
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
