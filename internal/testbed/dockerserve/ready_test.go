package dockerserve

import (
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

func TestReplicaSetReady(t *testing.T) {
	p, _ := NewPlan(ReplSet, "p")
	rs := p.ReplicaSets[0]
	hosts := []string{"p-rs0-0:27017", "p-rs0-1:27017", "p-rs0-2:27017"}
	primary := Answer{Hello: Hello{IsWritablePrimary: true, SetName: "rs0", Hosts: hosts}}
	secondary := Answer{Hello: Hello{Secondary: true, SetName: "rs0", Hosts: hosts}}
	for _, tc := range []struct {
		name    string
		answers []Answer
		want    string // "" when ready
	}{
		{"settled", []Answer{primary, secondary, secondary}, ""},
		{"first member down", []Answer{{Err: errors.New("connection refused")}, secondary, secondary}, "p-rs0-0 does not answer"},
		{"not initiated", []Answer{{}, {}, {}}, "p-rs0-0 is not a member yet"},
		{"electing", []Answer{{Hello: Hello{SetName: "rs0", Hosts: hosts}}, secondary, secondary}, "p-rs0-0 is not the primary yet"},
		{"another member won the first election", []Answer{secondary, {Hello: Hello{IsWritablePrimary: true, SetName: "rs0", Hosts: hosts}}, secondary}, "p-rs0-0 is not the primary yet"},
		{"a member still in startup", []Answer{primary, secondary, {Hello: Hello{SetName: "rs0"}}}, "p-rs0-2 is not a secondary yet"},
		{"a member of another set", []Answer{primary, secondary, {Hello: Hello{Secondary: true, SetName: "rs1"}}}, "p-rs0-2 is not a member yet"},
		{"primary's config lacks a member", []Answer{{Hello: Hello{IsWritablePrimary: true, SetName: "rs0", Hosts: hosts[:2]}}, secondary, secondary}, "does not list p-rs0-2:27017"},
		{"too few answers", []Answer{primary}, "1 answers for 3 members"},
	} {
		err := ReplicaSetReady(rs, tc.answers)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: not ready: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestRouterReady(t *testing.T) {
	p, _ := NewPlan(Sharded, "p")
	mongos := Answer{Hello: Hello{IsWritablePrimary: true, Msg: "isdbgrid"}}
	for _, tc := range []struct {
		name   string
		hello  Answer
		listed []string
		want   string
	}{
		{"both shards", mongos, []string{"shard0", "shard1"}, ""},
		{"one shard", mongos, []string{"shard0"}, "does not list shard shard1"},
		{"no answer", Answer{Err: errors.New("refused")}, nil, "mongos does not answer"},
		{"a mongod", Answer{Hello: Hello{IsWritablePrimary: true, SetName: "shard0"}}, []string{"shard0", "shard1"}, "does not answer as a mongos"},
	} {
		err := RouterReady(p, tc.hello, tc.listed)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: not ready: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestInitiated(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{mongo.CommandError{Code: 23, Name: "AlreadyInitialized", Message: "already initialized"}, true},
		{mongo.CommandError{Code: 74, Name: "NodeNotFound", Message: "No host described in new configuration"}, false},
		{errors.New("server selection error"), false},
	} {
		if got := Initiated(tc.err); got != tc.want {
			t.Errorf("Initiated(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
