package dockerserve

import (
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestParseTopology(t *testing.T) {
	for in, want := range map[string]Topology{"": Single, "single": Single, " ReplSet ": ReplSet, "sharded": Sharded} {
		got, err := ParseTopology(in)
		if err != nil || got != want {
			t.Errorf("ParseTopology(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseTopology("replica"); err == nil {
		t.Error("ParseTopology(\"replica\") accepted an unknown name")
	}
}

func TestImage(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "mongo:" + DefaultVersion,
		"6.0":                       "mongo:6.0",
		"8.0":                       "mongo:8.0",
		"mongo:7":                   "mongo:7",
		"mongo":                     "mongo:latest",
		"registry.example/mongo:8":  "registry.example/mongo:8",
		"registry.example:5000/mdb": "registry.example:5000/mdb:latest",
	} {
		repo, tag := Image(in)
		if got := repo + ":" + tag; got != want {
			t.Errorf("Image(%q) = %s, want %s", in, got, want)
		}
	}
}

// Each topology has the members the issue names, each runs the mongod or
// mongos its role needs, and the names are unique to the run.
func TestPlanContainers(t *testing.T) {
	for _, tc := range []struct {
		topology Topology
		names    []string
		sets     int
		entry    string
	}{
		{Single, []string{"p-rs0-0"}, 1, "p-rs0-0"},
		{ReplSet, []string{"p-rs0-0", "p-rs0-1", "p-rs0-2"}, 1, "p-rs0-0"},
		{Sharded, []string{"p-cfg", "p-shard0", "p-shard1", "p-mongos"}, 3, "p-mongos"},
	} {
		p, err := NewPlan(tc.topology, "p")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range p.Containers() {
			names = append(names, c.Name)
			cmd := strings.Join(c.Cmd, " ")
			if !strings.Contains(cmd, "--bind_ip_all --port 27017") {
				t.Errorf("%s: %s: %q does not listen on all interfaces at 27017", tc.topology, c.Name, cmd)
			}
			switch {
			case strings.HasSuffix(c.Name, "-mongos"):
				if c.Cmd[0] != "mongos" || !strings.Contains(cmd, "--configdb cfg/p-cfg:27017") {
					t.Errorf("mongos command %q", cmd)
				}
			case strings.HasSuffix(c.Name, "-cfg"):
				if !strings.Contains(cmd, "--replSet cfg") || !slices.Contains(c.Cmd, "--configsvr") {
					t.Errorf("config server command %q", cmd)
				}
			case strings.Contains(c.Name, "-shard"):
				if !slices.Contains(c.Cmd, "--shardsvr") {
					t.Errorf("shard command %q", cmd)
				}
			default:
				if c.Cmd[0] != "mongod" || !strings.Contains(cmd, "--replSet rs0") {
					t.Errorf("replica set member command %q", cmd)
				}
			}
		}
		if !slices.Equal(names, tc.names) || len(p.ReplicaSets) != tc.sets || p.Entry != tc.entry || p.Network != "p" {
			t.Errorf("%s: containers %v, %d replica sets, entry %s, network %s", tc.topology, names, len(p.ReplicaSets), p.Entry, p.Network)
		}
	}
	if _, err := NewPlan("mesh", "p"); err == nil {
		t.Error("NewPlan accepted an unknown topology")
	}
}

func TestInitiateCommand(t *testing.T) {
	p, _ := NewPlan(ReplSet, "p")
	got := p.ReplicaSets[0].InitiateCommand()
	want := bson.D{{Key: "replSetInitiate", Value: bson.D{
		{Key: "_id", Value: "rs0"},
		{Key: "members", Value: bson.A{
			bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: "p-rs0-0:27017"}, {Key: "priority", Value: 2}},
			bson.D{{Key: "_id", Value: 1}, {Key: "host", Value: "p-rs0-1:27017"}},
			bson.D{{Key: "_id", Value: 2}, {Key: "host", Value: "p-rs0-2:27017"}},
		}},
	}}}
	assertSameBSON(t, got, want)

	s, _ := NewPlan(Sharded, "p")
	assertSameBSON(t, s.ReplicaSets[0].InitiateCommand(), bson.D{{Key: "replSetInitiate", Value: bson.D{
		{Key: "_id", Value: "cfg"},
		{Key: "configsvr", Value: true},
		{Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: "p-cfg:27017"}}}},
	}}})
}

func TestAddShardCommands(t *testing.T) {
	s, _ := NewPlan(Sharded, "p")
	got := s.AddShardCommands()
	want := []bson.D{
		{{Key: "addShard", Value: "shard0/p-shard0:27017"}, {Key: "name", Value: "shard0"}},
		{{Key: "addShard", Value: "shard1/p-shard1:27017"}, {Key: "name", Value: "shard1"}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d commands, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		assertSameBSON(t, got[i], want[i])
	}
	r, _ := NewPlan(ReplSet, "p")
	if cmds := r.AddShardCommands(); len(cmds) != 0 {
		t.Errorf("a replica set adds shards: %v", cmds)
	}
}

func TestURI(t *testing.T) {
	r, _ := NewPlan(ReplSet, "p")
	if got := r.URI("localhost:32768"); got != "mongodb://localhost:32768/?directConnection=true" {
		t.Errorf("replica set URI %s", got)
	}
	s, _ := NewPlan(Sharded, "p")
	if got := s.URI("localhost:32768"); got != "mongodb://localhost:32768/" {
		t.Errorf("sharded URI %s", got)
	}
}

func TestEntrypoint(t *testing.T) {
	if got := strings.Join(Entrypoint(), " "); got != "timeout 3600 docker-entrypoint.sh" {
		t.Errorf("entrypoint %q", got)
	}
}

func assertSameBSON(t *testing.T, got, want bson.D) {
	t.Helper()
	g, err := bson.MarshalExtJSON(got, false, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := bson.MarshalExtJSON(want, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("got  %s\nwant %s", g, w)
	}
}
