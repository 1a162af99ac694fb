// Package faultproxy is a TCP proxy on loopback that injects network
// faults between a client and a server: a partition (blackhole) in either
// or both directions, and delays.
//
// A partition holds bytes back instead of dropping them, the way TCP
// behaves while its retransmissions go unanswered: when the partition
// heals, whatever was sent meanwhile is delivered, in order, including
// requests whose sender has long given up on them, and a close is
// delivered only after the bytes before it. Delays apply to bytes read
// while they are set, and never reorder bytes of one direction.
package faultproxy

import (
	"net"
	"sync"
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
	changed chan struct{}    // closed and replaced when the settings change
	conns   map[*link]struct{}
	closed  bool
	wg      sync.WaitGroup
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
		l := &link{client: c, server: up, done: make(chan struct{})}
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
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.server.Close()
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
				c := chunk{data: buf[:n], at: time.Now(), wait: p.delayOf(dir)}
				select {
				case q <- c:
				case <-done:
					return
				}
			}
			if err != nil {
				select {
				case q <- chunk{eof: true, at: time.Now(), wait: p.delayOf(dir)}:
				case <-done:
				}
				return
			}
		}
	}()
	defer p.wg.Done()
	defer l.pumps.Done()
	for c := range q {
		if !p.waitDeliverable(c, dir, done) {
			return
		}
		if c.eof {
			// The other side closed (or failed): so does this one, once
			// what came before has been delivered.
			l.close()
			return
		}
		if _, err := dst.Write(c.data); err != nil {
			l.close()
			return
		}
	}
}

func (p *Proxy) delayOf(dir int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay[dir]
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
