package hint

import (
	"errors"
	"log/slog"
	"net"
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

// send sends e as a hint: an announcement to every process recorded, an
// end to those that announced they wait for a claim of its key (to every
// process if none did). Best effort: a hint that cannot be sent is not.
// It returns to how many processes it was sent.
func (f *Feed) send(e driver.Event) int {
	m := msg{key: e.Key, epoch: e.Epoch, proc: e.Proc, until: e.Until}
	switch e.Kind {
	case driver.Waiting:
		m.kind = kindWaiting
	case driver.Ended:
		m.kind = kindEnded
	default:
		return 0
	}
	now := f.store.ServerTime()
	f.mu.Lock()
	if f.conn == nil || f.key == nil {
		f.mu.Unlock()
		return 0
	}
	var to []string
	if m.kind == kindEnded {
		for addr, until := range f.interest[e.Key] {
			if until.After(now.Earliest) {
				to = append(to, addr)
			}
		}
	}
	if len(to) == 0 {
		for _, p := range f.peersByID {
			if p.expires.After(now.Earliest) {
				to = append(to, p.addr.String())
			}
		}
	}
	f.mu.Unlock()
	return f.sendTo(m, to)
}

// sendTo sends m to each of to, under this process's seq, sent time and
// address, and returns to how many it was sent.
func (f *Feed) sendTo(m msg, to []string) (sent int) {
	if len(to) == 0 {
		return 0
	}
	f.mu.Lock()
	conn, key := f.conn, f.key
	f.seq++
	m.seq, m.from, m.addr = f.seq, f.id, f.advertise
	f.mu.Unlock()
	m.sent = f.store.ServerTime().Latest
	b, err := encode(m, key)
	if err != nil {
		f.cfg.Logger.Debug("dsync: hint not sent", slog.String("key", m.key), slog.Any("err", err))
		return 0
	}
	for _, addr := range to {
		ua, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			continue
		}
		if _, err := conn.WriteTo(b, ua); err != nil {
			f.cfg.Logger.Debug("dsync: hint not sent", slog.String("to", addr), slog.Any("err", err))
			continue
		}
		sent++
	}
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
		if n > maxDatagram {
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
		return // not yet read from the store: nothing can be checked
	}
	m, err := decode(b, key)
	if err != nil || m.from == f.id {
		return
	}
	if !f.guard.admit(m) {
		f.cfg.Logger.Debug("dsync: hint dropped (too old, taken already, or over the rate)", slog.String("from", m.from))
		return
	}
	f.notePeer(m.from, m.addr)
	if m.kind == kindWaiting {
		f.noteInterest(m.key, m.addr, m.until)
	}
	if e, ok := m.event(); ok {
		f.deliver(func(h driver.FeedHandler) { h.Event(e) })
	}
}

// notePeer records that the process from takes hints at addr, for as
// long as a record in the store would hold.
func (f *Feed) notePeer(from, addr string) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil || from == "" {
		return
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
}

// noteInterest records that the process at addr waits for a claim of
// key, until until (at most interestFor).
func (f *Feed) noteInterest(key, addr string, until time.Time) {
	now := f.store.ServerTime().Earliest
	until = minTime(until, now.Add(interestFor))
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.interest) >= maxInterest {
		for k, addrs := range f.interest {
			for a, u := range addrs {
				if !u.After(now) {
					delete(addrs, a)
				}
			}
			if len(addrs) == 0 {
				delete(f.interest, k)
			}
		}
		if len(f.interest) >= maxInterest {
			clear(f.interest)
		}
	}
	if f.interest[key] == nil {
		f.interest[key] = make(map[string]time.Time)
	}
	if until.After(f.interest[key][addr]) {
		f.interest[key][addr] = until
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
