package faultproxy

import "time"

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
