package dockerserve

import (
	"fmt"
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Topology names a kind of deployment.
type Topology string

// The deployments [NewPlan] knows.
const (
	// Single is a one-member replica set: the quickest real MongoDB with
	// the replica-set features (majority writes, an oplog).
	Single Topology = "single"
	// ReplSet is a three-member replica set: a majority write waits for a
	// secondary.
	ReplSet Topology = "replset"
	// Sharded is two shards (one-member replica sets), a config server
	// replica set and a mongos the tests connect to.
	Sharded Topology = "sharded"
)

// ParseTopology reads a topology name; "" is [Single].
func ParseTopology(s string) (Topology, error) {
	switch t := Topology(strings.ToLower(strings.TrimSpace(s))); t {
	case "":
		return Single, nil
	case Single, ReplSet, Sharded:
		return t, nil
	}
	return "", fmt.Errorf("unknown topology %q: want single, replset or sharded", s)
}

// DefaultVersion is the MongoDB version started when none is asked for.
const DefaultVersion = "7.0"

// Image returns the official image's repository and tag for a MongoDB
// version ("6.0", "7.0", "8.0"; "" is [DefaultVersion]), or splits an
// explicit image reference ("registry.example/mongo:8.0").
func Image(versionOrImage string) (repo, tag string) {
	s := strings.TrimSpace(versionOrImage)
	if s == "" {
		s = DefaultVersion
	}
	if !strings.ContainsAny(s, "/:") && !strings.HasPrefix(s, "mongo") {
		return "mongo", s
	}
	repo, tag = s, "latest"
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		repo, tag = s[:i], s[i+1:]
	}
	return repo, tag
}

// Port is the port every member listens on inside its container; the
// engine publishes it on a free port of the host.
const Port = 27017

// PortID is [Port] as the engine names it.
const PortID = "27017/tcp"

// Lifetime bounds how long a container runs, in seconds: the entrypoint is
// wrapped in `timeout`, so a container left behind by a killed harness
// stops (and, being auto-removed, goes) by itself.
const Lifetime = 3600

// Label marks every container and network the harness starts, so that an
// operator can find leftovers (docker ps --filter label=dsync.mongotest).
const Label = "dsync.mongotest"

// Container is one mongod or mongos.
type Container struct {
	// Name is the container's name, which is also its host name on the
	// deployment's network: the members find each other by it.
	Name string
	// Cmd is the command line the image's entrypoint runs.
	Cmd []string
}

// Entrypoint is what every container runs Cmd with: the image's own
// entrypoint under [Lifetime].
func Entrypoint() []string {
	return []string{"timeout", fmt.Sprint(Lifetime), "docker-entrypoint.sh"}
}

// Host is the member's address on the deployment's network.
func (c Container) Host() string { return net.JoinHostPort(c.Name, fmt.Sprint(Port)) }

// ReplicaSet is a replica set to start and initiate.
type ReplicaSet struct {
	ID           string
	ConfigServer bool // a sharded cluster's config server replica set
	Members      []Container
}

// Plan is a deployment: what to start, in which order, and where the
// tests connect.
type Plan struct {
	Topology Topology
	// Network is the name of the deployment's own network.
	Network string
	// ReplicaSets are started and initiated first, in order; each must
	// have a primary before the next step.
	ReplicaSets []ReplicaSet
	// Router is the mongos of a sharded cluster, started once the config
	// server has a primary; nil otherwise.
	Router *Container
	// Entry is the container whose published port goes into the URI: the
	// replica set's first member (the one made primary) or the mongos.
	Entry string
}

// wiredTigerCache keeps five mongods within a laptop's or a CI runner's
// memory (each would otherwise take half of the machine's RAM).
var wiredTigerCache = []string{"--wiredTigerCacheSizeGB", "0.25"}

func mongod(name, setID string, role ...string) Container {
	cmd := []string{"mongod", "--replSet", setID, "--bind_ip_all", "--port", fmt.Sprint(Port)}
	cmd = append(cmd, role...)
	cmd = append(cmd, wiredTigerCache...)
	return Container{Name: name, Cmd: cmd}
}

// NewPlan lays out a deployment of topology t whose container and network
// names start with prefix (unique per run, so that runs can share an
// engine).
func NewPlan(t Topology, prefix string) (Plan, error) {
	p := Plan{Topology: t, Network: prefix}
	name := func(s string) string { return prefix + "-" + s }
	switch t {
	case Single:
		p.ReplicaSets = []ReplicaSet{{ID: "rs0", Members: []Container{mongod(name("rs0-0"), "rs0")}}}
	case ReplSet:
		rs := ReplicaSet{ID: "rs0"}
		for i := range 3 {
			rs.Members = append(rs.Members, mongod(name(fmt.Sprintf("rs0-%d", i)), "rs0"))
		}
		p.ReplicaSets = []ReplicaSet{rs}
	case Sharded:
		cfg := ReplicaSet{ID: "cfg", ConfigServer: true, Members: []Container{mongod(name("cfg"), "cfg", "--configsvr")}}
		p.ReplicaSets = []ReplicaSet{cfg}
		for i := range 2 {
			id := fmt.Sprintf("shard%d", i)
			p.ReplicaSets = append(p.ReplicaSets, ReplicaSet{ID: id, Members: []Container{mongod(name(id), id, "--shardsvr")}})
		}
		p.Router = &Container{Name: name("mongos"), Cmd: []string{
			"mongos", "--configdb", cfg.SeedList(), "--bind_ip_all", "--port", fmt.Sprint(Port),
		}}
	default:
		return Plan{}, fmt.Errorf("unknown topology %q", t)
	}
	if p.Router != nil {
		p.Entry = p.Router.Name
	} else {
		p.Entry = p.ReplicaSets[0].Members[0].Name
	}
	return p, nil
}

// Containers lists every container of the plan in start order.
func (p Plan) Containers() []Container {
	var cs []Container
	for _, rs := range p.ReplicaSets {
		cs = append(cs, rs.Members...)
	}
	if p.Router != nil {
		cs = append(cs, *p.Router)
	}
	return cs
}

// SeedList is the replica set as mongos --configdb and addShard name it:
// "id/host1,host2".
func (rs ReplicaSet) SeedList() string {
	hosts := make([]string, len(rs.Members))
	for i, m := range rs.Members {
		hosts[i] = m.Host()
	}
	return rs.ID + "/" + strings.Join(hosts, ",")
}

// InitiateCommand is the replSetInitiate command (rs.initiate's) run on
// the first member. That member gets the highest priority, so that it is
// the primary once the set settles: the URI of a replica set names it.
func (rs ReplicaSet) InitiateCommand() bson.D {
	members := bson.A{}
	for i, m := range rs.Members {
		member := bson.D{{Key: "_id", Value: i}, {Key: "host", Value: m.Host()}}
		if i == 0 && len(rs.Members) > 1 {
			member = append(member, bson.E{Key: "priority", Value: 2})
		}
		members = append(members, member)
	}
	config := bson.D{{Key: "_id", Value: rs.ID}}
	if rs.ConfigServer {
		config = append(config, bson.E{Key: "configsvr", Value: true})
	}
	config = append(config, bson.E{Key: "members", Value: members})
	return bson.D{{Key: "replSetInitiate", Value: config}}
}

// Shards are the replica sets the mongos serves: all but the config
// server.
func (p Plan) Shards() []ReplicaSet {
	var shards []ReplicaSet
	for _, rs := range p.ReplicaSets {
		if !rs.ConfigServer && p.Router != nil {
			shards = append(shards, rs)
		}
	}
	return shards
}

// AddShardCommands are the addShard commands (sh.addShard's) run on the
// mongos, one per shard.
func (p Plan) AddShardCommands() []bson.D {
	var cmds []bson.D
	for _, rs := range p.Shards() {
		cmds = append(cmds, bson.D{{Key: "addShard", Value: rs.SeedList()}, {Key: "name", Value: rs.ID}})
	}
	return cmds
}

// URI is the connection string the tests get, given the host:port the
// engine published the entry container's port on. The members' names are
// known only on the deployment's network, so a replica set is reached
// directly at its primary (a majority write still waits for the
// secondaries); a mongos needs no discovery.
func (p Plan) URI(hostPort string) string {
	if p.Router != nil {
		return "mongodb://" + hostPort + "/"
	}
	return "mongodb://" + hostPort + "/?directConnection=true"
}
