package faultproxy

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// opMsgBytes builds an OP_MSG: body as its kind-0 section, then a kind-1
// section of seq documents if any, and a checksum if crc.
func opMsgBytes(t *testing.T, reqID, respTo int32, crc bool, body bson.D, seq ...bson.D) []byte {
	t.Helper()
	msg := make([]byte, headerLen, 256)
	binary.LittleEndian.PutUint32(msg[4:], uint32(reqID))
	binary.LittleEndian.PutUint32(msg[8:], uint32(respTo))
	binary.LittleEndian.PutUint32(msg[12:], opMsg)
	var flags uint32
	if crc {
		flags |= flagCRC
	}
	msg = binary.LittleEndian.AppendUint32(msg, flags)
	if len(seq) > 0 {
		// Document sequences may come before the body.
		var docs []byte
		for _, d := range seq {
			b, err := bson.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, b...)
		}
		id := append([]byte("updates"), 0)
		msg = append(msg, sectionSeq)
		msg = binary.LittleEndian.AppendUint32(msg, uint32(4+len(id)+len(docs)))
		msg = append(append(msg, id...), docs...)
	}
	b, err := bson.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	msg = append(append(msg, sectionBody), b...)
	if crc {
		msg = append(msg, 0xde, 0xad, 0xbe, 0xef) // not checked
	}
	binary.LittleEndian.PutUint32(msg, uint32(len(msg)))
	return msg
}

func TestWireParsing(t *testing.T) {
	upd := opMsgBytes(t, 7, 0, true, bson.D{{Key: "update", Value: "locks"}, {Key: "$db", Value: "d"}},
		bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{}}})
	if h := parseHeader(upd); h.requestID != 7 || h.opCode != opMsg || int(h.length) != len(upd) {
		t.Fatalf("header %+v of a %d-byte message", h, len(upd))
	}
	if cmd, ok := commandName(upd); !ok || cmd != "update" || !isWrite(cmd) {
		t.Fatalf("command %q, %v", cmd, ok)
	}
	find := opMsgBytes(t, 8, 0, false, bson.D{{Key: "find", Value: "locks"}})
	if cmd, ok := commandName(find); !ok || cmd != "find" || isWrite(cmd) {
		t.Fatalf("command %q, %v", cmd, ok)
	}
	for _, c := range []string{"insert", "delete", "findAndModify"} {
		if !isWrite(c) {
			t.Errorf("%s is a write", c)
		}
	}
	if _, ok := commandName(append([]byte(nil), upd[:headerLen+6]...)); ok {
		t.Error("a truncated message parsed")
	}

	if c, ok := commandOf(upd); !ok || c != (Command{Name: "update", Collection: "locks"}) || !c.IsWrite() {
		t.Fatalf("command %+v, %v", c, ok)
	}
	fam := opMsgBytes(t, 8, 0, false, bson.D{{Key: "findAndModify", Value: "locks_sessions"}, {Key: "query", Value: bson.D{{Key: "_id", Value: "s1"}}}, {Key: "$db", Value: "d"}})
	if c, ok := commandOf(fam); !ok || c != (Command{"findAndModify", "locks_sessions", "s1"}) || !c.IsWrite() {
		t.Fatalf("command %+v, %v", c, ok)
	}
	if c, ok := commandOf(opMsgBytes(t, 9, 0, false, bson.D{{Key: "ping", Value: 1}})); !ok || c != (Command{Name: "ping"}) || c.IsWrite() {
		t.Fatalf("command %+v, %v", c, ok)
	}

	for _, tc := range []struct {
		cmd     string
		reply   bson.D
		ok      bool
		n, nMod int64
	}{
		{"update", bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}, true, 1, 1},
		{"update", bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(0)}, {Key: "ok", Value: 1.0}}, true, 1, 0},
		{"update", bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}, {Key: "ok", Value: 1.0}}, true, 0, 0},
		{"insert", bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "boom"}}, false, 0, 0},
		{"insert", bson.D{{Key: "n", Value: int64(2)}, {Key: "nModified", Value: int32(5)}, {Key: "ok", Value: int32(1)}}, true, 2, 0},
		{"findAndModify", bson.D{{Key: "lastErrorObject", Value: bson.D{{Key: "n", Value: int32(1)}}}, {Key: "value", Value: nil}, {Key: "ok", Value: 1.0}}, true, 1, 0},
	} {
		ok, n, nMod, parsed := writeResult(tc.cmd, opMsgBytes(t, 1, 7, false, tc.reply))
		if !parsed || ok != tc.ok || n != tc.n || nMod != tc.nMod {
			t.Errorf("%s reply %v: ok %v n %d nModified %d parsed %v, want ok %v n %d nModified %d", tc.cmd, tc.reply, ok, n, nMod, parsed, tc.ok, tc.n, tc.nMod)
		}
	}

	// The splitter finds messages across any chunking.
	stream := append(append(append([]byte(nil), upd...), find...), upd...)
	for _, size := range []int{1, 3, 17, len(upd), len(stream)} {
		var s splitter
		var got []string
		for i := 0; i < len(stream); i += size {
			s.feed(stream[i:min(i+size, len(stream))], func(msg []byte) {
				cmd, _ := commandName(msg)
				got = append(got, cmd)
			})
		}
		if len(got) != 3 || got[0] != "update" || got[1] != "find" || got[2] != "update" || len(s.buf) != 0 {
			t.Errorf("chunks of %d: %v (%d bytes left)", size, got, len(s.buf))
		}
	}
	// A length no message has stops it for good.
	var s splitter
	calls := 0
	s.feed([]byte{3, 0, 0, 0, 1, 2, 3, 4}, func([]byte) { calls++ })
	s.feed(upd, func([]byte) { calls++ })
	if !s.broken || calls != 0 {
		t.Errorf("broken %v after a bad length, %d messages", s.broken, calls)
	}
}

// wireServer answers every OP_MSG with {n, ok: 1}, n given by the command
// name (default 0), and records each command as it arrives.
type wireServer struct {
	t    *testing.T
	ln   net.Listener
	n    map[string]int64
	mu   sync.Mutex
	got  []string
	done chan struct{}
}

func newWireServer(t *testing.T, n map[string]int64) *wireServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &wireServer{t: t, ln: ln, n: n, done: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); <-s.done; wg.Wait() })
	go func() {
		defer close(s.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				s.serve(c)
			}()
		}
	}()
	return s
}

// serve answers one connection until the client closes it; like a
// server, it handles each request before reading the next, so a request
// followed by a close is still answered.
func (s *wireServer) serve(c net.Conn) {
	for {
		var hdr [headerLen]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		h := parseHeader(hdr[:])
		msg := make([]byte, h.length)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(c, msg[headerLen:]); err != nil {
			return
		}
		cmd, _ := commandName(msg)
		s.mu.Lock()
		s.got = append(s.got, cmd)
		s.mu.Unlock()
		// Written even if the client is gone: the reply is the proof.
		_, _ = c.Write(opMsgBytes(s.t, 1000+h.requestID, h.requestID, false,
			bson.D{{Key: "n", Value: s.n[cmd]}, {Key: "ok", Value: 1.0}}))
	}
}

func (s *wireServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func readMsg(c net.Conn, timeout time.Duration) ([]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	var hdr [headerLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return nil, err
	}
	msg := make([]byte, parseHeader(hdr[:]).length)
	copy(msg, hdr[:])
	_, err := io.ReadFull(c, msg[headerLen:])
	return msg, err
}

// Requests sent while requests are delayed reach the server after their
// client closed the connection; the proxy records those that are writes,
// and whether the server applied them. Requests delivered before the
// client closed are not late, however long they took.
func TestLateWrites(t *testing.T) {
	srv := newWireServer(t, map[string]int64{"update": 1, "delete": 0})
	p, err := New(srv.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	// On time: answered, and not late.
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(opMsgBytes(t, 1, 0, false, bson.D{{Key: "update", Value: "x"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := readMsg(c, 5*time.Second); err != nil {
		t.Fatalf("reply: %v", err)
	}
	c.Close()

	// Held: the client gives up and closes; the requests still arrive,
	// and the server's replies are read though nobody receives them.
	const delay = time.Second
	p.SetDelay(Up, delay)
	c, err = net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	for i, cmd := range []string{"update", "find", "delete"} {
		if _, err := c.Write(opMsgBytes(t, int32(10+i), 0, false, bson.D{{Key: cmd, Value: "x"}})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := readMsg(c, 100*time.Millisecond); err == nil {
		t.Fatal("a delayed request was answered early")
	}
	closing := time.Now()
	c.Close()
	p.SetDelay(Up, 0)

	// A connection opened after the delay was lifted flows at once.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write(opMsgBytes(t, 20, 0, false, bson.D{{Key: "insert", Value: "x"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := readMsg(c2, 5*time.Second); err != nil {
		t.Fatalf("reply on a new connection: %v", err)
	}
	if time.Since(sent) >= delay {
		t.Fatalf("the new connection's request waited behind the held ones (%v)", time.Since(sent))
	}

	var lw []LateWrite
	for deadline := time.Now().Add(5 * time.Second); ; {
		lw = p.LateWrites()
		if len(lw) == 2 && lw[0].Replied && lw[1].Replied || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.received(); len(got) != 5 || got[1] != "insert" || got[2] != "update" || got[3] != "find" || got[4] != "delete" {
		t.Errorf("server received %v", got)
	}
	if len(lw) != 2 {
		t.Fatalf("late writes %+v, want the update and the delete", lw)
	}
	upd, del := lw[0], lw[1]
	if upd.Command != "update" || !upd.Applied() || upd.N != 1 {
		t.Errorf("late update %+v: want applied, n 1", upd)
	}
	if del.Command != "delete" || !del.Replied || !del.OK || del.Applied() {
		t.Errorf("late delete %+v: want answered ok with n 0, not applied", del)
	}
	for _, w := range lw {
		if w.Delivered.Before(w.ClientClosed) || w.Delivered.Sub(w.Read) < delay-10*time.Millisecond ||
			w.ClientClosed.Before(closing) || w.RepliedAt.Before(w.Delivered) {
			t.Errorf("times of %+v (the client closed at %v)", w, closing)
		}
	}
}

// A client that resets its connection (SO_LINGER 0) instead of closing
// it has given up too.
func TestLateWriteAfterReset(t *testing.T) {
	srv := newWireServer(t, map[string]int64{"update": 1})
	p, err := New(srv.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Partition(Up)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(opMsgBytes(t, 1, 0, false, bson.D{{Key: "update", Value: "x"}})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // read by the proxy
	if err := c.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	time.Sleep(50 * time.Millisecond)
	p.Heal()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		lw := p.LateWrites()
		if len(lw) == 1 && lw[0].Applied() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late writes %+v, want the update applied", lw)
		}
	}
}

// An armed stall begins with the next write a client sends: requests
// before it pass, the write and what is read during the stall are held,
// and what is read after it flows.
func TestStallNextWrite(t *testing.T) {
	srv := newWireServer(t, map[string]int64{"update": 1})
	p, err := New(srv.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const stall, delay = 300 * time.Millisecond, 1500 * time.Millisecond
	began, disarm := p.StallNextWrite(stall, delay)
	defer disarm()

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(opMsgBytes(t, 1, 0, false, bson.D{{Key: "find", Value: "x"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := readMsg(c, 5*time.Second); err != nil {
		t.Fatalf("a read before the stall: %v", err)
	}
	select {
	case <-began:
		t.Fatal("a read began the stall")
	default:
	}
	if _, err := c.Write(opMsgBytes(t, 2, 0, false, bson.D{{Key: "update", Value: "x"}})); err != nil {
		t.Fatal(err)
	}
	var start time.Time
	select {
	case start = <-began:
	case <-time.After(5 * time.Second):
		t.Fatal("the write did not begin the stall")
	}
	// During the stall, a new connection is held too.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write(opMsgBytes(t, 3, 0, false, bson.D{{Key: "find", Value: "x"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := readMsg(c, 100*time.Millisecond); err == nil {
		t.Fatal("the stalled write was answered early")
	}
	c.Close() // gives up on it
	time.Sleep(time.Until(start.Add(stall + 50*time.Millisecond)))
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if _, err := c3.Write(opMsgBytes(t, 4, 0, false, bson.D{{Key: "find", Value: "x"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := readMsg(c3, 5*time.Second); err != nil {
		t.Fatalf("a request after the stall: %v", err)
	}
	if time.Since(start) >= delay {
		t.Fatalf("a request after the stall was held (%v)", time.Since(start))
	}
	if _, err := readMsg(c2, 5*time.Second); err != nil || time.Since(start) < delay-10*time.Millisecond {
		t.Fatalf("a request during the stall: answered %v after it began, err %v", time.Since(start), err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		lw := p.LateWrites()
		if len(lw) == 1 && lw[0].Applied() && lw[0].Command == "update" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late writes %+v, want the update applied", lw)
		}
	}
}

// StallNext begins the stall only with a command its matcher accepts:
// other writes before it pass at once. The late write it holds back is
// recorded with its collection.
func TestStallNextMatching(t *testing.T) {
	srv := newWireServer(t, map[string]int64{"update": 1, "insert": 1})
	p, err := New(srv.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const stall, delay = 200 * time.Millisecond, time.Second
	began, disarm := p.StallNext(func(c Command) bool { return c.Name == "update" && c.Collection == "x_sessions" }, stall, delay)
	defer disarm()

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, cmd := range []bson.D{
		{{Key: "insert", Value: "x"}},
		{{Key: "update", Value: "x"}},
		{{Key: "insert", Value: "x_sessions"}},
	} {
		if _, err := c.Write(opMsgBytes(t, int32(1+i), 0, false, cmd)); err != nil {
			t.Fatal(err)
		}
		if _, err := readMsg(c, 5*time.Second); err != nil {
			t.Fatalf("%v before the stall: %v", cmd, err)
		}
		select {
		case <-began:
			t.Fatalf("%v began the stall", cmd)
		default:
		}
	}
	if _, err := c.Write(opMsgBytes(t, 9, 0, false, bson.D{{Key: "update", Value: "x_sessions"}})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-began:
	case <-time.After(5 * time.Second):
		t.Fatal("the matching update did not begin the stall")
	}
	if _, err := readMsg(c, 100*time.Millisecond); err == nil {
		t.Fatal("the stalled update was answered early")
	}
	c.Close() // gives up on it
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		lw := p.LateWrites()
		if len(lw) == 1 && lw[0].Applied() && lw[0].Command == "update" && lw[0].Collection == "x_sessions" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late writes %+v, want the update of x_sessions applied", lw)
		}
	}
}
