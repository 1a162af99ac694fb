package faultproxy

import (
	"net"
	"time"
)

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
	go p.readChunks(l, src, q, dir)
	p.writeChunks(l, dst, q, dir)
}

// readChunks is the reader of a pump: it reads src into chunks on q,
// each with the delay in force when it was read, and ends q with an eof
// chunk when src ends. Requests are looked at for a command that begins
// an armed stall, replies for those to late writes, as they are read.
func (p *Proxy) readChunks(l *link, src net.Conn, q chan<- chunk, dir int) {
	done := l.done
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
}

// writeChunks is the writer of a pump: it delivers each chunk of q to dst
// once waitDeliverable lets it, and passes the end of the stream on;
// down, once the client is gone, it drops what the server still sends.
func (p *Proxy) writeChunks(l *link, dst net.Conn, q <-chan chunk, dir int) {
	done := l.done
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

// delayOf is the delay of bytes read at t in direction dir.
func (p *Proxy) delayOf(dir int, t time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir == 0 && t.Before(p.stallEnd) {
		return max(p.delay[dir], p.stallDelay)
	}
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
