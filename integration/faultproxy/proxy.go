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
