package faultproxy

import (
	"encoding/binary"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Just enough of the MongoDB wire protocol to tell which commands the
// proxy delivered late, and whether the server applied them. A message
// starts with a 16-byte header (little-endian int32 messageLength,
// requestID, responseTo, opCode). An OP_MSG (opCode 2013) goes on with
// uint32 flagBits, then sections: kind 0 is one BSON document (the
// command, whose first key is its name, or the reply), kind 1 an int32
// size, an identifier and a sequence of documents; with flag bit 0 a
// CRC-32C checksum ends the message.

const (
	opMsg       = 2013
	headerLen   = 16
	maxMsgLen   = 48 << 20 // the server's maxMessageSizeBytes
	flagCRC     = 1 << 0
	sectionBody = 0
	sectionSeq  = 1
)

// header is a wire message's header.
type header struct {
	length, requestID, responseTo, opCode int32
}

func parseHeader(msg []byte) header {
	return header{
		length:     int32(binary.LittleEndian.Uint32(msg[0:])),
		requestID:  int32(binary.LittleEndian.Uint32(msg[4:])),
		responseTo: int32(binary.LittleEndian.Uint32(msg[8:])),
		opCode:     int32(binary.LittleEndian.Uint32(msg[12:])),
	}
}

// splitter cuts one direction of a connection into whole wire messages.
// A length it cannot believe means the stream is not the wire protocol
// (or the parser lost track): it stops splitting for good rather than
// guess.
type splitter struct {
	buf    []byte
	broken bool
}

// feed adds the bytes p and calls f with each message they complete. f
// must not keep the slice.
func (s *splitter) feed(p []byte, f func(msg []byte)) {
	if s.broken {
		return
	}
	s.buf = append(s.buf, p...)
	rest := s.buf
	for len(rest) >= 4 {
		n := int(int32(binary.LittleEndian.Uint32(rest)))
		if n < headerLen || n > maxMsgLen {
			s.broken, s.buf = true, nil
			return
		}
		if len(rest) < n {
			break
		}
		f(rest[:n])
		rest = rest[n:]
	}
	if len(rest) == 0 {
		s.buf = s.buf[:0]
		return
	}
	s.buf = append(s.buf[:0:0], rest...)
}

// msgBody returns the kind-0 section of an OP_MSG: the command of a
// request, or a reply.
func msgBody(msg []byte) (bson.Raw, bool) {
	if len(msg) < headerLen+4 || parseHeader(msg).opCode != opMsg {
		return nil, false
	}
	flags := binary.LittleEndian.Uint32(msg[headerLen:])
	end := len(msg)
	if flags&flagCRC != 0 {
		end -= 4
	}
	for i := headerLen + 4; i < end; {
		kind := msg[i]
		i++
		if i+4 > end {
			return nil, false
		}
		n := int(int32(binary.LittleEndian.Uint32(msg[i:])))
		if n < 4 || i+n > end {
			return nil, false
		}
		switch kind {
		case sectionBody:
			doc := bson.Raw(msg[i : i+n])
			if doc.Validate() != nil {
				return nil, false
			}
			return doc, true
		case sectionSeq:
			// size, identifier, documents: skipped whole.
		default:
			return nil, false
		}
		i += n
	}
	return nil, false
}

// A Command names a request: the command (the first key of its body,
// e.g. "update"), the collection it acts on (that key's value, when it
// is a string), and for a findAndModify the _id its query names, when a
// string (a dsync renewal names a session, a server-time sample "#clock").
type Command struct {
	Name       string
	Collection string
	ID         string
}

// IsWrite reports whether c changes documents: insert, update, delete or
// findAndModify.
func (c Command) IsWrite() bool { return isWrite(c.Name) }

// commandName returns the name of the command an OP_MSG request carries.
func commandName(msg []byte) (string, bool) {
	c, ok := commandOf(msg)
	return c.Name, ok
}

// commandOf returns the command an OP_MSG request carries: its name (the
// body's first key), when that key's value is a string the collection it
// names, and for a findAndModify its query's _id.
func commandOf(msg []byte) (Command, bool) {
	body, ok := msgBody(msg)
	if !ok {
		return Command{}, false
	}
	el, err := body.IndexErr(0)
	if err != nil {
		return Command{}, false
	}
	c := Command{Name: el.Key()}
	c.Collection, _ = el.Value().StringValueOK()
	if strings.EqualFold(c.Name, "findAndModify") {
		if id, err := body.LookupErr("query", "_id"); err == nil {
			c.ID, _ = id.StringValueOK()
		}
	}
	return c, true
}

// isWrite reports whether a command changes documents.
func isWrite(cmd string) bool {
	switch strings.ToLower(cmd) {
	case "insert", "update", "delete", "findandmodify":
		return true
	}
	return false
}

// writeResult reads a write command's reply: ok, and n, the number of
// documents inserted, matched (update) or deleted; for findAndModify,
// lastErrorObject.n; and for an update, nModified, the documents it
// changed (0 otherwise).
func writeResult(cmd string, reply []byte) (ok bool, n, modified int64, parsed bool) {
	body, valid := msgBody(reply)
	if !valid {
		return false, 0, 0, false
	}
	if v, err := body.LookupErr("ok"); err == nil {
		f, isNum := v.AsFloat64OK()
		ok = isNum && f == 1
	}
	path := []string{"n"}
	if strings.EqualFold(cmd, "findAndModify") {
		path = []string{"lastErrorObject", "n"}
	}
	if v, err := body.LookupErr(path...); err == nil {
		n, _ = v.AsInt64OK()
	}
	if strings.EqualFold(cmd, "update") {
		if v, err := body.LookupErr("nModified"); err == nil {
			modified, _ = v.AsInt64OK()
		}
	}
	return ok, n, modified, true
}
