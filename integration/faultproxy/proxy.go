// Package faultproxy is a TCP proxy on loopback that injects network
// faults between a client and a server: a partition (blackhole) in either
// or both directions, delays, and a stall of the requests that begins
// with a write command, or with the next command a test picks out
// (StallNextWrite, StallNext).
//
// A partition holds bytes back instead of dropping them, the way TCP
// behaves while its retransmissions go unanswered: when the partition
// heals, whatever was sent meanwhile is delivered, in order, including
// requests whose sender has long given up on them, and a close is
// delivered only after the bytes before it. Delays apply to bytes read
// while they are set, and never reorder bytes of one direction.
//
// A client's close reaches the server as a half-close, the way a FIN
// does: the server still reads and answers what came before it, and the
// proxy keeps reading the server's side (dropping what the client can no
// longer receive) until the server closes too. The proxy follows the
// MongoDB wire protocol on both directions just far enough to record the
// write commands it delivered after their client had closed the
// connection, and whether the server applied them (LateWrites).
package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Direction selects which way faults apply.
type Direction int

const (
	// Up is client to server (requests).
	Up Direction = 1 << iota
	// Down is server to client (replies).
	Down
	// Both directions.
	Both = Up | Down
)

// Proxy forwards connections accepted on Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	blocked Direction
	delay   [2]time.Duration // by direction index
	// A stall of the requests: armed by StallNextWrite, it begins when a
	// write arrives and delays what is read until stallEnd by stallDelay.
	stallArm   *stallArm
	stallEnd   time.Time
	stallDelay time.Duration
	changed    chan struct{} // closed and replaced when the settings change
	conns      map[*link]struct{}
	closed     bool
	late       []*LateWrite
	wg         sync.WaitGroup
}

// A Command names a request: the command (the first key of its body,
// e.g. "update"), the collection it acts on (that key's value, when it
// is a string), and for a findAndModify the _id its query names, when a
// string (a dsync renewal names a session, a server-time sample "#clock").
type Command struct {
	Name       string
	Collection string
	ID         string
}

// IsWrite reports whether c changes documents: insert, update, delete or
// findAndModify.
func (c Command) IsWrite() bool { return isWrite(c.Name) }

// LateWrite is a write command (insert, update, delete, findAndModify)
// that the proxy delivered to the server after its client had closed or
// reset the connection: its sender had given up on it.
type LateWrite struct {
	Command    string
	Collection string // the collection it acts on
	ID         string // findAndModify: the _id its query names (see Command)
	// Read is when the proxy read the request's last bytes from the
	// client, ClientClosed when it saw the client's side end, Delivered
	// when it wrote the request to the server.
	Read, ClientClosed, Delivered time.Time
	// Replied: the server's reply was seen, at RepliedAt. OK is its ok
	// field, N the documents it inserted, matched (update) or deleted,
	// Modified (update only) the documents it changed: an update can match
	// a document and leave it as it was ($max of a smaller value).
	Replied   bool
	RepliedAt time.Time
	OK        bool
	N         int64
	Modified  int64
}

// Applied reports whether the server applied the write: it replied ok
// with n > 0 (for an update: it matched a document, whether or not it
// changed it).
func (w LateWrite) Applied() bool { return w.Replied && w.OK && w.N > 0 }

// LateWrites returns the late writes delivered so far, in the order they
// were delivered, with what the server replied to each as far as seen.
func (p *Proxy) LateWrites() []LateWrite {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]LateWrite, len(p.late))
	for i, w := range p.late {
		out[i] = *w
	}
	return out
}

// New listens on a loopback port and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, changed: make(chan struct{}), conns: make(map[*link]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients should connect to (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Partition holds back all traffic in dir (Both for a full partition)
// until Heal. New connections are accepted, but nothing passes.
func (p *Proxy) Partition(dir Direction) {
	p.update(func() { p.blocked |= dir })
}

// Heal ends a partition; held bytes are delivered.
func (p *Proxy) Heal() {
	p.update(func() { p.blocked = 0 })
}

// SetDelay delays the bytes read from now on in dir by d (0 removes the
// delay). Bytes already in flight keep the delay they got.
func (p *Proxy) SetDelay(dir Direction, d time.Duration) {
	p.update(func() {
		if dir&Up != 0 {
			p.delay[0] = d
		}
		if dir&Down != 0 {
			p.delay[1] = d
		}
	})
}

type stallArm struct {
	match        func(Command) bool
	stall, delay time.Duration
	began        chan time.Time
}

// StallNextWrite arms a stall of the requests that begins with the next
// write command (insert, update, delete, findAndModify) a client sends:
// StallNext(Command.IsWrite, stall, delay).
func (p *Proxy) StallNextWrite(stall, delay time.Duration) (began <-chan time.Time, disarm func()) {
	return p.StallNext(Command.IsWrite, stall, delay)
}

// StallNext arms a stall of the requests: when the proxy next reads a
// command from a client that match accepts, the bytes it read with it and
// every byte it reads from clients for the following stall are delivered
// delay after they were read. Connections opened after the stall flow at
// once; bytes sent after it on a connection that carried stalled ones
// wait behind them. The returned channel yields the time the stall began;
// disarm cancels a stall that has not begun.
func (p *Proxy) StallNext(match func(Command) bool, stall, delay time.Duration) (began <-chan time.Time, disarm func()) {
	a := &stallArm{match: match, stall: stall, delay: delay, began: make(chan time.Time, 1)}
	p.mu.Lock()
	p.stallArm = a
	p.mu.Unlock()
	return a.began, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stallArm == a {
			p.stallArm = nil
		}
	}
}

// Reset closes every current connection at once, as a crashed middlebox
// would; the proxy keeps accepting new ones.
func (p *Proxy) Reset() {
	p.mu.Lock()
	conns := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		conns = append(conns, l)
	}
	p.mu.Unlock()
	for _, l := range conns {
		l.close()
	}
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.changed)
	p.changed = nil
	p.mu.Unlock()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) update(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	f()
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		l := &link{client: c, server: up, done: make(chan struct{}), pending: make(map[int32]*LateWrite)}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.close()
			return
		}
		p.conns[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(5) // two pumps of two goroutines each, and the closer
		l.pumps.Add(4)
		go p.pump(l, c, up, 0)
		go p.pump(l, up, c, 1)
		go func() {
			defer p.wg.Done()
			l.pumps.Wait()
			l.close()
			p.mu.Lock()
			delete(p.conns, l)
			p.mu.Unlock()
		}()
	}
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	pumps          sync.WaitGroup
	once           sync.Once
	done           chan struct{} // closed by close

	// clientGone is when the client's side ended (UnixNano), 0 before.
	clientGone atomic.Int64
	// upRead splits what the up reader reads, up what the up writer
	// delivers, down what the down reader reads, into wire messages; each
	// is used by that goroutine alone.
	upRead, up, down splitter
	// pending are the late writes awaiting their reply, by request id;
	// guarded by the proxy's mu.
	pending    map[int32]*LateWrite
	linger     atomic.Pointer[time.Timer]
	lingerOnce sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.server.Close()
		if t := l.linger.Load(); t != nil {
			t.Stop()
		}
	})
}

// lingerAfterHalfClose bounds how long a link stays open after passing
// the client's close on, waiting for the server to close its side.
const lingerAfterHalfClose = 30 * time.Second

// halfClose passes the client's close on to the server as a FIN, after
// which the server answers what it was sent and closes its side, which
// ends the link (or lingerAfterHalfClose does).
func (l *link) halfClose() {
	tc, ok := l.server.(*net.TCPConn)
	if !ok || tc.CloseWrite() != nil {
		l.close()
		return
	}
	l.startLinger()
}

// startLinger ends the link lingerAfterHalfClose from now, once: after the
// client's close was passed on, or after the client turned out to be gone
// while a partition still holds its close back.
func (l *link) startLinger() {
	l.lingerOnce.Do(func() {
		l.linger.Store(time.AfterFunc(lingerAfterHalfClose, l.close))
		select {
		case <-l.done:
			l.linger.Load().Stop()
		default:
		}
	})
}

type chunk struct {
	data []byte
	at   time.Time // when read; delivered at at+delay, once not blocked
	wait time.Duration
	eof  bool
}

// pump copies src to dst in direction index dir (0 up, 1 down), holding
// chunks back while that direction is partitioned or delayed. It starts
// a reader goroutine and runs the writer itself; both count in l.pumps
// and p.wg.
func (p *Proxy) pump(l *link, src, dst net.Conn, dir int) {
	q := make(chan chunk, 256)
	done := l.done
	go func() {
		defer p.wg.Done()
		defer l.pumps.Done()
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				at := time.Now()
				if dir == 0 {
					p.triggerStall(l, buf[:n], at)
				} else {
					// Replies are read as they arrive, delivered or not.
					p.replies(l, buf[:n], at)
				}
				c := chunk{data: buf[:n], at: at, wait: p.delayOf(dir, at)}
				select {
				case q <- c:
				case <-done:
					return
				}
			}
			if err != nil {
				if dir == 0 {
					l.clientGone.CompareAndSwap(0, time.Now().UnixNano())
				}
				select {
				case q <- chunk{eof: true, at: time.Now(), wait: p.delayOf(dir, time.Now())}:
				case <-done:
				}
				return
			}
		}
	}()
	defer p.wg.Done()
	defer l.pumps.Done()
	dropping := false // down: the client is gone
	for c := range q {
		if dropping && !c.eof {
			continue
		}
		if !p.waitDeliverable(c, dir, done) {
			return
		}
		if c.eof {
			if dir == 0 {
				// The client closed (or failed): so does this side, once
				// what came before has been delivered; the server still
				// answers it.
				l.halfClose()
				return
			}
			// The server closed (or failed): so does the client's side,
			// once what came before has been delivered.
			l.close()
			return
		}
		if dir == 0 {
			p.requests(l, c.data, c.at)
		}
		if _, err := dst.Write(c.data); err != nil {
			if dir == 1 {
				// The client is gone. Keep reading the server's replies to
				// what was sent before, until the server closes, or for
				// lingerAfterHalfClose at most.
				dropping = true
				l.startLinger()
				continue
			}
			l.close()
			return
		}
	}
}

// requests follows the requests the up writer is about to deliver, and
// records the write commands among them whose client is already gone.
func (p *Proxy) requests(l *link, data []byte, read time.Time) {
	l.up.feed(data, func(msg []byte) {
		gone := l.clientGone.Load()
		if gone == 0 {
			return
		}
		cmd, ok := commandOf(msg)
		if !ok || !cmd.IsWrite() {
			return
		}
		w := &LateWrite{Command: cmd.Name, Collection: cmd.Collection, ID: cmd.ID, Read: read, ClientClosed: time.Unix(0, gone), Delivered: time.Now()}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.late = append(p.late, w)
		l.pending[parseHeader(msg).requestID] = w
	})
}

// replies matches the server's replies to the late writes awaiting them.
func (p *Proxy) replies(l *link, data []byte, at time.Time) {
	l.down.feed(data, func(msg []byte) {
		id := parseHeader(msg).responseTo
		p.mu.Lock()
		w := l.pending[id]
		delete(l.pending, id)
		p.mu.Unlock()
		if w == nil {
			return
		}
		ok, n, modified, parsed := writeResult(w.Command, msg)
		p.mu.Lock()
		defer p.mu.Unlock()
		w.Replied, w.RepliedAt, w.OK, w.N, w.Modified = parsed, at, ok, n, modified
	})
}

// delayOf is the delay of bytes read at t in direction dir.
func (p *Proxy) delayOf(dir int, t time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir == 0 && t.Before(p.stallEnd) {
		return max(p.delay[dir], p.stallDelay)
	}
	return p.delay[dir]
}

// triggerStall begins an armed stall if the request bytes read at t
// complete a command it matches.
func (p *Proxy) triggerStall(l *link, data []byte, t time.Time) {
	l.upRead.feed(data, func(msg []byte) {
		p.mu.Lock()
		a := p.stallArm
		p.mu.Unlock()
		if a == nil {
			return
		}
		if cmd, ok := commandOf(msg); !ok || !a.match(cmd) {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stallArm != a {
			return
		}
		p.stallArm = nil
		p.stallEnd, p.stallDelay = t.Add(a.stall), a.delay
		a.began <- t
	})
}

// waitDeliverable blocks until c may be delivered, or done closes.
func (p *Proxy) waitDeliverable(c chunk, dir int, done <-chan struct{}) bool {
	bit := Up
	if dir == 1 {
		bit = Down
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return false
		}
		blocked := p.blocked&bit != 0
		changed := p.changed
		p.mu.Unlock()
		if !blocked {
			wait := time.Until(c.at.Add(c.wait))
			if wait <= 0 {
				return true
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-changed:
				t.Stop()
			case <-done:
				t.Stop()
				return false
			}
			continue
		}
		select {
		case <-changed:
		case <-done:
			return false
		}
	}
}
