// Package fakewire is a server that speaks just enough of MongoDB's wire
// protocol for a driver to connect to it, and answers buildInfo as a test
// says: for the recognition of servers by their buildInfo (FerretDB's
// releases), which a test server of one product cannot show.
package fakewire

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

// BuildInfo serves, on a loopback port until the test ends, a
// standalone server over MongoDB's wire protocol (OP_MSG, and OP_QUERY
// for the driver's handshake), and returns its address. Its buildInfo
// reply is version 7.0.77 with the fields of buildInfo; it answers
// hello, ping and endSessions, and refuses every other command
// (CommandNotFound).
func BuildInfo(t testing.TB, buildInfo bson.D) string {
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
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serveBuildInfo(c, buildInfo)
			})
		}
	})
	return ln.Addr().String()
}

// serveBuildInfo answers the requests on c until it closes.
func serveBuildInfo(c net.Conn, buildInfo bson.D) {
	const opReply, opQuery, opMsg = 1, 2004, 2013
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
		var reply []byte
		switch op {
		case opMsg:
			if len(body) < 5 || body[4] != 0 {
				return
			}
			reply = append(binary.LittleEndian.AppendUint32(nil, 0), 0)
			reply = append(reply, answerBuildInfo(bson.Raw(body[5:]), buildInfo)...)
		case opQuery:
			rest := body[4:]
			i := strings.IndexByte(string(rest), 0)
			if i < 0 || len(rest) < i+9 {
				return
			}
			reply = binary.LittleEndian.AppendUint32(nil, 0)   // responseFlags
			reply = binary.LittleEndian.AppendUint64(reply, 0) // cursorID
			reply = binary.LittleEndian.AppendUint32(reply, 0) // startingFrom
			reply = binary.LittleEndian.AppendUint32(reply, 1) // numberReturned
			reply = append(reply, answerBuildInfo(bson.Raw(rest[i+9:]), buildInfo)...)
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

// answerBuildInfo is the fake server's reply to cmd.
func answerBuildInfo(cmd bson.Raw, buildInfo bson.D) bson.Raw {
	ok := bson.E{Key: "ok", Value: 1.0}
	var d bson.D
	elems, _ := cmd.Elements()
	name := ""
	if len(elems) > 0 {
		name = strings.ToLower(elems[0].Key())
	}
	switch name {
	case "hello", "ismaster":
		d = bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "ismaster", Value: true},
			{Key: "maxBsonObjectSize", Value: int32(16 << 20)}, {Key: "maxMessageSizeBytes", Value: int32(48 << 20)},
			{Key: "maxWriteBatchSize", Value: int32(100000)}, {Key: "localTime", Value: time.Now()},
			{Key: "minWireVersion", Value: int32(0)}, {Key: "maxWireVersion", Value: int32(21)}, ok}
	case "buildinfo":
		d = append(append(bson.D{{Key: "version", Value: "7.0.77"}}, buildInfo...), ok)
	case "ping", "endsessions":
		d = bson.D{ok}
	default:
		d = bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "no such command: " + name}, {Key: "code", Value: int32(59)}, {Key: "codeName", Value: "CommandNotFound"}}
	}
	b, err := bson.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}
