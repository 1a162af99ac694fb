package dockerserve

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A whole deployment started against a fake engine whose containers are
// fake members on loopback: each member answers hello as MongoDB does
// before and after its replica set is initiated (a secondary only a few
// answers later, as a real one that syncs first), and the mongos lists
// the shards it was given. Start returns the plan's URI once every
// replica set has its primary and the mongos lists both shards, and Close
// removes every container and the network.
func TestStartDeployment(t *testing.T) {
	for _, topology := range []Topology{Single, ReplSet, Sharded} {
		t.Run(string(topology), func(t *testing.T) {
			plan, err := NewPlan(topology, "p")
			if err != nil {
				t.Fatal(err)
			}
			e := newDeployEngine(t, plan)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var log strings.Builder
			c, err := Start(ctx, plan, "mongo", "8.0", &log)
			if err != nil {
				t.Fatalf("Start: %v\nlog:\n%s", err, log.String())
			}
			if want := plan.URI(e.members[plan.Entry].addr); c.URI != want {
				t.Errorf("URI %s, want %s", c.URI, want)
			}
			for _, rs := range plan.ReplicaSets {
				first := e.members[rs.Members[0].Name]
				if got := first.initiated(); got != rs.ID {
					t.Errorf("%s: initiated %q", rs.ID, got)
				}
				for _, m := range rs.Members[1:] {
					if !e.members[m.Name].secondary() {
						t.Errorf("Start returned before %s was a secondary", m.Name)
					}
				}
			}
			if plan.Router != nil {
				if got := e.members[plan.Router.Name].shardList(); !slices.Equal(got, []string{"shard0", "shard1"}) {
					t.Errorf("mongos shards %v", got)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if left := e.running(); len(left) != 0 || !e.networkRemoved() {
				t.Errorf("after Close: containers %v left, network removed %v", left, e.networkRemoved())
			}
		})
	}
}

// deployEngine is a fake Docker engine whose containers are fakeMembers.
type deployEngine struct {
	t       *testing.T
	plan    Plan
	members map[string]*fakeMember // by container name

	mu         sync.Mutex
	live       map[string]bool
	netRemoved bool
}

func newDeployEngine(t *testing.T, plan Plan) *deployEngine {
	e := &deployEngine{t: t, plan: plan, members: map[string]*fakeMember{}, live: map[string]bool{}}
	for _, rs := range plan.ReplicaSets {
		for i, m := range rs.Members {
			e.members[m.Name] = startFakeMember(t, &fakeMember{set: &rs, index: i})
		}
	}
	if plan.Router != nil {
		e.members[plan.Router.Name] = startFakeMember(t, &fakeMember{router: true})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: e}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	return e
}

func (e *deployEngine) running() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	for n, ok := range e.live {
		if ok {
			names = append(names, n)
		}
	}
	return names
}

func (e *deployEngine) networkRemoved() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.netRemoved
}

func (e *deployEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := apiVersion.ReplaceAllString(r.URL.Path, "/")
	id := strings.Split(strings.TrimPrefix(path, "/containers/"), "/")[0]
	switch {
	case path == "/_ping":
		_, _ = w.Write([]byte("OK"))
	case path == "/version":
		_, _ = w.Write([]byte(`{"ApiVersion":"1.41","Version":"27.0.0"}`))
	case path == "/networks/create":
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"Id":"net1"}`))
	case path == "/networks/net1" && r.Method == "GET":
		_, _ = w.Write([]byte(`{"Id":"net1","Name":"p","Containers":{}}`))
	case path == "/networks/net1" && r.Method == "DELETE":
		e.mu.Lock()
		e.netRemoved = true
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(path, "/images/"):
		_, _ = w.Write([]byte(`{"Id":"sha256:0"}`)) // the image is there
	case path == "/containers/create":
		name := r.URL.Query().Get("name")
		var body struct{ Cmd []string }
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil || e.members[name] == nil {
			e.t.Errorf("create %q: %v %s", name, err, b)
			http.Error(w, `{"message":"bad create"}`, http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.live[name] = true
		e.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"Id":%q}`, name)
	case strings.HasSuffix(path, "/start"):
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(path, "/json") && e.members[id] != nil:
		_, port, _ := net.SplitHostPort(e.members[id].addr)
		fmt.Fprintf(w, `{"Id":%q,"Name":"/%s","NetworkSettings":{"Ports":{"27017/tcp":[{"HostIp":"0.0.0.0","HostPort":%q}]}}}`, id, id, port)
	case r.Method == "DELETE" && e.members[id] != nil:
		e.mu.Lock()
		e.live[id] = false
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		e.t.Errorf("unexpected call %s %s", r.Method, r.URL)
		http.Error(w, `{"message":"unexpected"}`, http.StatusInternalServerError)
	}
}

// fakeMember answers on loopback as one member of the plan: a mongod of
// set (the first member becomes the primary once replSetInitiate names
// it, the others secondaries a few hellos later), or a mongos.
type fakeMember struct {
	set    *ReplicaSet
	index  int
	router bool
	addr   string

	mu     sync.Mutex
	config string   // the replica set's _id once initiated
	hellos int      // hellos answered since then
	shards []string // a mongos's shards
}

// secondaryAfter is how many hellos a new secondary answers as syncing.
const secondaryAfter = 2

// peers lets a member learn that its set was initiated through another.
var peers sync.Map // set ID + "/" + member name → *fakeMember

func startFakeMember(t *testing.T, m *fakeMember) *fakeMember {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.addr = l.Addr().String()
	if m.set != nil {
		peers.Store(m.set.ID+"/"+m.set.Members[m.index].Name, m)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		if m.set != nil {
			peers.Delete(m.set.ID + "/" + m.set.Members[m.index].Name)
		}
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serveWire(c, m.answer)
			}()
		}
	}()
	return m
}

func (m *fakeMember) initiated() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.config
}

// secondary: the member has answered as a secondary.
func (m *fakeMember) secondary() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.config != "" && m.hellos > secondaryAfter
}

func (m *fakeMember) shardList() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.shards)
}

// answer is the member's reply to cmd.
func (m *fakeMember) answer(cmd bson.Raw) bson.D {
	elems, _ := cmd.Elements()
	if len(elems) == 0 {
		return bson.D{{Key: "ok", Value: 0.0}}
	}
	ok := bson.E{Key: "ok", Value: 1.0}
	base := bson.D{
		{Key: "maxBsonObjectSize", Value: int32(16 << 20)},
		{Key: "maxMessageSizeBytes", Value: int32(48 << 20)},
		{Key: "maxWriteBatchSize", Value: int32(100000)},
		{Key: "minWireVersion", Value: int32(0)},
		{Key: "maxWireVersion", Value: int32(25)},
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch name := strings.ToLower(elems[0].Key()); {
	case (name == "hello" || name == "ismaster") && m.router:
		return append(base, bson.E{Key: "isWritablePrimary", Value: true}, bson.E{Key: "msg", Value: "isdbgrid"}, ok)
	case name == "hello" || name == "ismaster":
		if m.config == "" {
			return append(base, bson.E{Key: "isWritablePrimary", Value: false}, ok)
		}
		m.hellos++
		var hosts bson.A
		for _, member := range m.set.Members {
			hosts = append(hosts, member.Host())
		}
		d := append(base, bson.E{Key: "setName", Value: m.config}, bson.E{Key: "hosts", Value: hosts})
		switch {
		case m.index == 0:
			d = append(d, bson.E{Key: "isWritablePrimary", Value: true})
		case m.hellos > secondaryAfter: // syncing first, as a new secondary does
			d = append(d, bson.E{Key: "isWritablePrimary", Value: false}, bson.E{Key: "secondary", Value: true})
		default:
			d = append(d, bson.E{Key: "isWritablePrimary", Value: false})
		}
		return append(d, ok)
	case name == "replsetinitiate" && m.set != nil && m.index == 0:
		config, _ := cmd.Lookup("replSetInitiate").DocumentOK()
		id, _ := bson.Raw(config).Lookup("_id").StringValueOK()
		if m.config != "" {
			return bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "already initialized"}, {Key: "code", Value: int32(23)}, {Key: "codeName", Value: "AlreadyInitialized"}}
		}
		m.config = id
		for _, member := range m.set.Members[1:] {
			if p, found := peers.Load(m.set.ID + "/" + member.Name); found {
				peer := p.(*fakeMember)
				peer.mu.Lock()
				peer.config = id
				peer.mu.Unlock()
			}
		}
		return bson.D{ok}
	case name == "addshard" && m.router:
		seed, _ := cmd.Lookup("addShard").StringValueOK()
		id, _, _ := strings.Cut(seed, "/")
		if !slices.Contains(m.shards, id) {
			m.shards = append(m.shards, id)
		}
		return bson.D{{Key: "shardAdded", Value: id}, ok}
	case name == "listshards" && m.router:
		var shards bson.A
		for _, s := range m.shards {
			shards = append(shards, bson.D{{Key: "_id", Value: s}})
		}
		return bson.D{{Key: "shards", Value: shards}, ok}
	case name == "endsessions" || name == "ping":
		return bson.D{ok}
	}
	return bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "no such command"}, {Key: "code", Value: int32(59)}}
}

// serveWire answers MongoDB wire protocol requests on c (OP_MSG, and
// OP_QUERY for a legacy handshake) with answer's replies until c closes.
func serveWire(c net.Conn, answer func(bson.Raw) bson.D) {
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
			doc, _ := bson.Marshal(answer(bson.Raw(body[5:])))
			reply = append(binary.LittleEndian.AppendUint32(nil, 0), 0)
			reply = append(reply, doc...)
		case opQuery:
			rest := body[4:]
			i := strings.IndexByte(string(rest), 0)
			if i < 0 || len(rest) < i+9 {
				return
			}
			doc, _ := bson.Marshal(answer(bson.Raw(rest[i+9:])))
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
