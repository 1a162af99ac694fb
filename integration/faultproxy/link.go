package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

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
