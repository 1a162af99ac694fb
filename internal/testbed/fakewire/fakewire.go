// Package fakewire is a server that speaks just enough of MongoDB's wire
// protocol for a driver to connect to it, and answers buildInfo as a test
// says: for the recognition of servers by their buildInfo (FerretDB's
// releases), which a test server of one product cannot show.
package fakewire

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// BuildInfo serves, on a loopback port until the test ends, a
// standalone server whose buildInfo reply is version 7.0.77 with the
// fields of buildInfo; it answers hello, ping and endSessions, and
// refuses every other command (CommandNotFound). It returns its address.
func BuildInfo(t testing.TB, buildInfo bson.D) string {
	t.Helper()
	return Serve(t, func(cmd bson.Raw) bson.Raw {
		ok := bson.E{Key: "ok", Value: 1.0}
		switch name := Name(cmd); name {
		case "hello", "ismaster":
			return Marshal(append(Hello(), ok))
		case "buildinfo":
			return Marshal(append(append(bson.D{{Key: "version", Value: "7.0.77"}}, buildInfo...), ok))
		case "ping", "endsessions":
			return Marshal(bson.D{ok})
		default:
			return NotFound(name)
		}
	})
}

// Serve serves answer's replies over MongoDB's wire protocol (OP_MSG, and
// OP_QUERY for a driver's legacy handshake) on a loopback port until the
// test ends, and returns its address. answer is given each command's
// document and returns the reply's.
func Serve(t testing.TB, answer func(cmd bson.Raw) bson.Raw) string {
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
				serve(c, answer)
			})
		}
	})
	return ln.Addr().String()
}

// serve answers the requests on c until it closes.
func serve(c net.Conn, answer func(cmd bson.Raw) bson.Raw) {
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
			reply = append(reply, answer(bson.Raw(body[5:]))...)
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
			reply = append(reply, answer(bson.Raw(rest[i+9:]))...)
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

// Name is cmd's name in lower case ("" if it has none).
func Name(cmd bson.Raw) string {
	elems, err := cmd.Elements()
	if err != nil || len(elems) == 0 {
		return ""
	}
	return strings.ToLower(elems[0].Key())
}

// Hello is the fields of a standalone primary's hello reply (without
// ok): a caller appends what its server adds.
func Hello() bson.D {
	return bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "ismaster", Value: true},
		{Key: "maxBsonObjectSize", Value: int32(16 << 20)}, {Key: "maxMessageSizeBytes", Value: int32(48 << 20)},
		{Key: "maxWriteBatchSize", Value: int32(100000)}, {Key: "localTime", Value: time.Now()},
		{Key: "minWireVersion", Value: int32(0)}, {Key: "maxWireVersion", Value: int32(21)}}
}

// NotFound is the reply to a command the server does not know.
func NotFound(name string) bson.Raw {
	return Marshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "no such command: " + name},
		{Key: "code", Value: int32(59)}, {Key: "codeName", Value: "CommandNotFound"}})
}

// Marshal is bson.Marshal of a reply a test wrote, which cannot fail.
func Marshal(d bson.D) bson.Raw {
	b, err := bson.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}

// Connect serves buildInfo (BuildInfo) and returns a client connected
// to it directly, disconnected when the test ends.
func Connect(t testing.TB, buildInfo bson.D) *mongo.Client {
	t.Helper()
	return ConnectTo(t, BuildInfo(t, buildInfo))
}

// ConnectTo returns a client connected directly to the server at addr
// (one that Serve returned), disconnected when the test ends.
func ConnectTo(t testing.TB, addr string) *mongo.Client {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.Disconnect(ctx)
	})
	return client
}

// A Reply is a buildInfo reply's fields as a server of Release sends
// them (0: MongoDB).
type Reply struct {
	Name      string
	BuildInfo bson.D
	Release   int
}

// Replies are the ways MongoDB and FerretDB's releases mark buildInfo,
// for the tests of everything that recognises them: a FerretDB 2 may
// mark its reply with a ferretdb document alone.
var Replies = []Reply{
	{"MongoDB", nil, 0},
	{"FerretDB 1", bson.D{{Key: "ferretdbVersion", Value: "v1.24.0"}}, 1},
	{"FerretDB 1, version unknown", bson.D{{Key: "ferretdbVersion", Value: "unknown"}}, 1},
	{"FerretDB 2, ferretdbVersion", bson.D{{Key: "ferretdbVersion", Value: "v2.1.0"}}, 2},
	{"FerretDB 2, ferretdb document", bson.D{{Key: "ferretdb", Value: bson.D{{Key: "version", Value: "v2.5.0"}}}}, 2},
}
