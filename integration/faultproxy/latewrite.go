package faultproxy

import "time"

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
