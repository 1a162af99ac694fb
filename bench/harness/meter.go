package harness

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A Meter counts what one process's client sends to its server: commands
// (as the driver reports them: MongoDB commands from the driver's command
// monitor, Redis commands from a go-redis hook, etcd RPCs and stream
// messages from gRPC interceptors) and the bytes its connections write and
// read. Drivers feed it; scenarios read it.
type Meter struct {
	commands atomic.Int64
	out, in  atomic.Int64

	mu     sync.Mutex
	record bool
	events []Event
	byName map[string]int64 // commands sent, by name
}

// An Event is one command the client completed.
type Event struct {
	Name   string
	At     int64 // Mono() at completion
	Took   time.Duration
	Failed bool
}

// NewMeter returns a zeroed Meter.
func NewMeter() *Meter { return &Meter{} }

// Command records one command sent and answered (or failed).
func (m *Meter) Command(name string, took time.Duration, failed bool) {
	m.commands.Add(1)
	m.mu.Lock()
	if m.byName == nil {
		m.byName = make(map[string]int64)
	}
	m.byName[name]++
	if m.record {
		m.events = append(m.events, Event{Name: name, At: Mono(), Took: took, Failed: failed})
	}
	m.mu.Unlock()
}

// Counts is a snapshot of a Meter's counters.
type Counts struct {
	Commands int64
	BytesOut int64
	BytesIn  int64
}

// Sub returns c − o.
func (c Counts) Sub(o Counts) Counts {
	return Counts{c.Commands - o.Commands, c.BytesOut - o.BytesOut, c.BytesIn - o.BytesIn}
}

// Snapshot returns the counters now.
func (m *Meter) Snapshot() Counts {
	return Counts{m.commands.Load(), m.out.Load(), m.in.Load()}
}

// ByName returns how many commands of each name were sent so far.
func (m *Meter) ByName() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.byName))
	for n, c := range m.byName {
		out[n] = c
	}
	return out
}

// Record starts keeping every command as an Event (clearing earlier ones).
func (m *Meter) Record() {
	m.mu.Lock()
	m.record, m.events = true, nil
	m.mu.Unlock()
}

// Stop stops recording and returns the events recorded since Record.
func (m *Meter) Stop() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev := m.events
	m.record, m.events = false, nil
	return ev
}

// Conn wraps c so that its bytes are counted.
func (m *Meter) Conn(c net.Conn) net.Conn { return &meteredConn{Conn: c, m: m} }

type meteredConn struct {
	net.Conn
	m *Meter
}

func (c *meteredConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.m.in.Add(int64(n))
	return n, err
}

func (c *meteredConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.m.out.Add(int64(n))
	return n, err
}
