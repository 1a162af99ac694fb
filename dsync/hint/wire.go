package hint

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The wire format of a hint: one UDP datagram, authenticated with
// HMAC-SHA256 under the store's hint key.
//
//	magic "dsh2" | kind (1) | seq (8) | sent (8) | epoch (8) | until (8)
//	| from, addr, proc, key (each a 2-byte length and its bytes) | MAC (32)
//
// Integers are big-endian; times are Unix nanoseconds of the store's
// time (sent: the latest it can be as the sender sends; until: a
// Waiting's end, a Held's claim's session's confirmed expiry, zero
// otherwise or when the sender has none to tell: a receiver of that
// time ignores a Held's until). seq counts the sender's hints, so that a
// receiver drops one it has already taken.
//
// The MAC covers the datagram before it and then the receiver's peer ID
// (a 2-byte length and its bytes), which is not sent: the receiver puts
// its own. A hint is so bound to the one process it was sent to: played
// to another, even one that listens where its receiver did, it fails its
// MAC, and the receiver's record of the hints it has seen (guard.go)
// covers the rest.
//
// A Waiting may end, before its MAC, with need (4): how many ends the
// waiter must hear of, at least, before it may hold (driver.Event.Need),
// present only when it is more than 1. A Waiting without it (need 1 or
// unknown) decodes with need 0, which the owner of the claim treats as
// 1: it sends the end at once. A waiter whose need drops to 1 says so
// with a hint of its own kind (kindNext), no longer than a Waiting
// without need.
//
// Releases before the receiver's ID was bound used magic "dsh1" and a
// MAC over the datagram alone: a process of such a release and one of
// this one drop each other's hints (errShort), as they would hints that
// do not get through. See docs/operations.md ("Direct hints", upgrading).

const (
	magic = "dsh2"
	// maxDatagram bounds what is sent and read: a hint about a key too
	// long for it goes through the store's feed only.
	maxDatagram = 8192
	macLen      = sha256.Size
)

// Kinds of hints.
const (
	kindHello   byte = 1 // a process that takes hints started: record it
	kindWaiting byte = 2 // driver.Waiting
	kindEnded   byte = 3 // driver.Ended
	kindHeld    byte = 4 // driver.Held
	kindWelcome byte = 5 // the answer to a hello: this process takes hints too
	// kindNext: a waiter that announced it waits for the claim needs
	// only its end now (its need dropped to 1: Feed.Tell).
	kindNext byte = 6
)

// msg is a hint as sent.
type msg struct {
	kind  byte
	seq   uint64
	sent  time.Time
	epoch uint64
	until time.Time
	from  string // the sender's peer ID
	addr  string // where the sender takes hints
	proc  string // the publishing Client (driver.Event.Proc)
	key   string
	need  uint32 // a Waiting's driver.Event.Need; 0 or 1: not on the wire
	// to is the receiver's peer ID: covered by the MAC, not on the wire
	// (decode sets it to the ID of the process that decodes).
	to string
}

var (
	errShort   = errors.New("hint: datagram too short or malformed")
	errMAC     = errors.New("hint: bad MAC")
	errTooLong = errors.New("hint: hint too long for a datagram")
)

// encode returns m as a datagram authenticated under key, for the
// process whose peer ID is m.to.
func encode(m msg, key []byte) ([]byte, error) {
	body, err := encodeBody(m)
	if err != nil {
		return nil, err
	}
	return seal(body, m.to, key)
}

// encodeBody returns m as a datagram's body, everything but its MAC: a
// hint sent to several processes is encoded once, then sealed for each.
func encodeBody(m msg) ([]byte, error) {
	b := make([]byte, 0, 68+len(m.from)+len(m.addr)+len(m.proc)+len(m.key)+macLen)
	b = append(b, magic...)
	b = append(b, m.kind)
	b = binary.BigEndian.AppendUint64(b, m.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(m.sent)))
	b = binary.BigEndian.AppendUint64(b, m.epoch)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(m.until)))
	for _, s := range []string{m.from, m.addr, m.proc, m.key} {
		if len(s) > 0xffff {
			return nil, errTooLong
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	if m.kind == kindWaiting && m.need > 1 {
		b = binary.BigEndian.AppendUint32(b, m.need)
	}
	return b, nil
}

// seal returns body with its MAC under key for the process whose peer ID
// is to appended, in a slice of its own: body is left as it was.
func seal(body []byte, to string, key []byte) ([]byte, error) {
	if len(to) > 0xffff {
		return nil, errTooLong
	}
	b := append(body[:len(body):len(body)], sum(body, to, key)...)
	if len(b) > maxDatagram {
		return nil, errTooLong
	}
	return b, nil
}

// sum returns the MAC of body sent to the process whose peer ID is to.
func sum(body []byte, to string, key []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	var n [2]byte
	binary.BigEndian.PutUint16(n[:], uint16(len(to)))
	mac.Write(n[:])
	mac.Write([]byte(to))
	return mac.Sum(nil)
}

// decode checks b's MAC under key, as sent to the process whose peer ID
// is self, and returns the hint it carries.
func decode(b, key []byte, self string) (msg, error) {
	const fixed = len(magic) + 1 + 4*8
	if len(b) < fixed+4*2+macLen || string(b[:len(magic)]) != magic {
		return msg{}, errShort
	}
	body, got := b[:len(b)-macLen], b[len(b)-macLen:]
	if len(self) > 0xffff || !hmac.Equal(sum(body, self, key), got) {
		return msg{}, errMAC
	}
	p := body[len(magic):]
	m := msg{kind: p[0], to: self}
	p = p[1:]
	m.seq = binary.BigEndian.Uint64(p)
	m.sent = fromUnixNano(int64(binary.BigEndian.Uint64(p[8:])))
	m.epoch = binary.BigEndian.Uint64(p[16:])
	m.until = fromUnixNano(int64(binary.BigEndian.Uint64(p[24:])))
	p = p[32:]
	var fields [4]string
	for i := range fields {
		if len(p) < 2 {
			return msg{}, errShort
		}
		n := int(binary.BigEndian.Uint16(p))
		if len(p) < 2+n {
			return msg{}, errShort
		}
		fields[i], p = string(p[2:2+n]), p[2+n:]
	}
	switch {
	case len(p) == 0:
	case len(p) == 4 && m.kind == kindWaiting && binary.BigEndian.Uint32(p) > 1:
		m.need = binary.BigEndian.Uint32(p)
	default:
		// A need of 0 or 1 is never written, nor one on another kind
		// than a Waiting: decoding one would not encode back to the same
		// bytes.
		return msg{}, errShort
	}
	m.from, m.addr, m.proc, m.key = fields[0], fields[1], fields[2], fields[3]
	return m, nil
}

// event is the feed event a hint of kind Waiting, Ended or Held carries.
func (m msg) event() (driver.Event, bool) {
	e := driver.Event{Key: m.key, Epoch: m.epoch, Proc: m.proc}
	switch m.kind {
	case kindWaiting:
		e.Kind, e.Until, e.Need = driver.Waiting, m.until, uint64(m.need)
	case kindEnded:
		e.Kind = driver.Ended
	case kindHeld:
		e.Kind, e.Until = driver.Held, m.until
	default:
		return driver.Event{}, false
	}
	return e, true
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
