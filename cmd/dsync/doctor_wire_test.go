//go:build unix

package main

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/testbed/fakewire"
)

// fakeServer serves l's answers on a loopback port over MongoDB's wire
// protocol until the test ends, and returns its address.
func fakeServer(t *testing.T, l lookAlike) string {
	return fakewire.Serve(t, l.answer)
}

// answer is l's reply to cmd.
func (l lookAlike) answer(cmd bson.Raw) bson.Raw {
	ok := bson.E{Key: "ok", Value: 1.0}
	var d bson.D
	switch name := fakewire.Name(cmd); name {
	case "":
		return mustMarshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "bad command"}})
	case "hello", "ismaster":
		d = append(append(fakewire.Hello(), l.hello...), ok)
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
		return fakewire.NotFound(name)
	}
	return mustMarshal(d)
}

var mustMarshal = fakewire.Marshal
