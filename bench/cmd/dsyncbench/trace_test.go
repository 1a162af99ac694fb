package main

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestCommandTarget: the trace names what a command is about, so that a
// claim's insert, its end marker's and a walk's reads can be told apart.
func TestCommandTarget(t *testing.T) {
	raw := func(d bson.D) bson.Raw {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name string
		cmd  bson.D
		want string
	}{
		{"insert", bson.D{{Key: "insert", Value: "locks_x"}, {Key: "documents", Value: bson.A{
			bson.D{{Key: "_id", Value: "k@7"}}, bson.D{{Key: "_id", Value: "k@7/s"}}}}}, `coll=locks_x id="k@7" docs=2`},
		{"find", bson.D{{Key: "find", Value: "locks_x"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: "k@7~n"}}}}, `coll=locks_x id="k@7~n"`},
		{"findAndModify", bson.D{{Key: "findAndModify", Value: "locks_x_sessions"}, {Key: "query", Value: bson.D{{Key: "_id", Value: "#clock"}}}}, `coll=locks_x_sessions id="#clock"`},
		{"getMore", bson.D{{Key: "getMore", Value: int64(5)}, {Key: "collection", Value: "locks_x_events"}}, `coll= id=`},
	} {
		if got := commandTarget(c.name, raw(c.cmd)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
