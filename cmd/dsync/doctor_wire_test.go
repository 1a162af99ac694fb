//go:build unix

package main

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// fakeServer serves l's answers on a loopback port over MongoDB's wire
// protocol (OP_MSG, and OP_QUERY for a legacy handshake) until the test
// ends, and returns its address.
func fakeServer(t *testing.T, l lookAlike) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serveWire(c, l)
			}()
		}
	}()
	return ln.Addr().String()
}

const (
	opReply = 1
	opQuery = 2004
	opMsg   = 2013
)

// serveWire answers the requests on c until it closes.
func serveWire(c net.Conn, l lookAlike) {
	for {
		var header [16]byte
		if _, err := io.ReadFull(c, header[:]); err != nil {
			return
		}
		size := int(binary.LittleEndian.Uint32(header[0:]))
		reqID := binary.LittleEndian.Uint32(header[4:])
		op := binary.LittleEndian.Uint32(header[12:])
		if size < 16 || size > 48<<20 {
			return
		}
		body := make([]byte, size-16)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		var cmd bson.Raw
		var reply []byte
		switch op {
		case opMsg:
			if len(body) < 5 || body[4] != 0 {
				return
			}
			cmd = bson.Raw(body[5:])
			doc := l.answer(cmd)
			reply = append(binary.LittleEndian.AppendUint32(nil, 0), 0)
			reply = append(reply, doc...)
		case opQuery:
			rest := body[4:]
			i := strings.IndexByte(string(rest), 0)
			if i < 0 || len(rest) < i+9 {
				return
			}
			cmd = bson.Raw(rest[i+9:])
			doc := l.answer(cmd)
			reply = binary.LittleEndian.AppendUint32(nil, 0)   // responseFlags
			reply = binary.LittleEndian.AppendUint64(reply, 0) // cursorID
			reply = binary.LittleEndian.AppendUint32(reply, 0) // startingFrom
			reply = binary.LittleEndian.AppendUint32(reply, 1) // numberReturned
			reply = append(reply, doc...)
			op = opReply
		default:
			return
		}
		out := binary.LittleEndian.AppendUint32(nil, uint32(16+len(reply)))
		out = binary.LittleEndian.AppendUint32(out, reqID+1<<20)
		out = binary.LittleEndian.AppendUint32(out, reqID)
		out = binary.LittleEndian.AppendUint32(out, op)
		if _, err := c.Write(append(out, reply...)); err != nil {
			return
		}
	}
}

// answer is l's reply to cmd.
func (l lookAlike) answer(cmd bson.Raw) bson.Raw {
	elems, err := cmd.Elements()
	if err != nil || len(elems) == 0 {
		return mustMarshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "bad command"}})
	}
	ok := bson.E{Key: "ok", Value: 1.0}
	var d bson.D
	switch name := strings.ToLower(elems[0].Key()); name {
	case "hello", "ismaster":
		d = append(bson.D{
			{Key: "isWritablePrimary", Value: true},
			{Key: "ismaster", Value: true},
			{Key: "maxBsonObjectSize", Value: int32(16 << 20)},
			{Key: "maxMessageSizeBytes", Value: int32(48 << 20)},
			{Key: "maxWriteBatchSize", Value: int32(100000)},
			{Key: "localTime", Value: time.Now()},
			{Key: "minWireVersion", Value: int32(0)},
			{Key: "maxWireVersion", Value: int32(21)},
		}, l.hello...)
		d = append(d, ok)
	case "buildinfo":
		d = append(append(bson.D{}, l.buildInfo...), ok)
	case "ping", "endsessions", "drop":
		d = bson.D{ok}
	case "create":
		if _, capped := cmd.Lookup("capped").BooleanOK(); capped {
			return mustMarshal(l.capped)
		}
		d = bson.D{ok}
	case "count":
		if l.count == 0 {
			return mustMarshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "count not supported"}, {Key: "code", Value: int32(115)}})
		}
		n := l.count
		if limit, ok := cmd.Lookup("limit").AsInt64OK(); ok && limit > 0 && int64(n) > limit {
			n = int32(limit)
		}
		d = bson.D{{Key: "n", Value: n}, ok}
	case "explain":
		if l.plan == nil {
			return mustMarshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "explain not supported"}, {Key: "code", Value: int32(115)}})
		}
		d = bson.D{{Key: "queryPlanner", Value: l.plan}, ok}
	default:
		d = bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "no such command: " + name}, {Key: "code", Value: int32(59)}, {Key: "codeName", Value: "CommandNotFound"}}
	}
	return mustMarshal(d)
}

func mustMarshal(d bson.D) bson.Raw {
	b, err := bson.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}
