package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/bench/harness"
	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/ferretserve"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// driver is dsync (dsync/mongo, leader/mongo) over MongoDB.
type driver struct {
	uri, db, rev string
	poll         time.Duration // 0: dsyncmongo's default
	wakeups      string        // "on", "off", or "": dsyncmongo's default (on)
	hints        bool          // -hints on: dsync.ClientWithHints on loopback
	noHints      bool          // -hints off: dsync.ClientWithHints("", "")
	readLinger   bool          // -read-linger on: an RWMutex's WithReadLinger(renew interval)
	name         string        // -name: the figures' library name, if not the default
	server       string        // -server: the server's description, if not from buildInfo
	cli          string        // -cli: the dsync command, for the status page
	// idleAge (-idle-age): the idle age of the scale scenario's namespace
	// of keys compacted (compaction.go); every other namespace has the
	// library's default, but the one of keys in the collection, none.
	idleAge time.Duration
	cliState
	compaction
}

// storeOptions are the dsyncmongo options of every store for scenario ns.
func (d *driver) storeOptions(ns string) []dsyncmongo.Option {
	// Quiet like the Mutexes: a run's Drop ends the wake-up streams of
	// the processes still connected, which would each warn.
	opts := []dsyncmongo.Option{dsyncmongo.WithCollection("locks_" + ns), dsyncmongo.WithLogger(quiet)}
	if t := processTracer(); t != nil {
		opts = append(opts, dsyncmongo.WithLogger(t.logger()))
	}
	return opts
}

// clientOptions are the options of every Client for scenario ns, of a
// lease of ttl.
func (d *driver) clientOptions(ns string, ttl time.Duration) []dsync.ClientOption {
	opts := []dsync.ClientOption{dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(quiet)}
	if d.poll != 0 {
		opts = append(opts, dsync.ClientWithPollInterval(d.poll))
	}
	if d.wakeups != "" {
		opts = append(opts, dsync.ClientWithWakeups(d.wakeups == "on"))
	}
	if d.hints {
		// Every process of a run is on this machine: loopback, any port.
		opts = append(opts, dsync.ClientWithHints(hintsListen, ""))
	}
	if d.noHints {
		opts = append(opts, dsync.ClientWithHints("", ""))
	}
	if t := processTracer(); t != nil {
		opts = append(opts, dsync.ClientWithObserver(t.observer()), dsync.ClientWithLogger(t.logger()))
	}
	return append(opts, d.compactionOptions(ns)...)
}

// hintsListen is where each process of a run with -hints on takes
// direct hints.
const hintsListen = "127.0.0.1:0"

// Name is "dsync", or "dsync-polling" with wake-ups turned off (waiters
// poll): the before/after of wake-ups, which are dsyncmongo's default;
// "-hints" is added with direct hints on (dsync-hints: events and hints;
// dsync-polling-hints: a store without events, as one without capped
// collections, and hints); "-linger" with the RWMutexes' read linger
// on (dsync-linger).
func (d *driver) Name() string {
	if d.name != "" {
		return d.name
	}
	name := "dsync"
	if d.wakeups == "off" {
		name = "dsync-polling"
	}
	if d.hints {
		name += "-hints"
	}
	if d.readLinger {
		name += "-linger"
	}
	return name
}

func (d *driver) Describe(ctx context.Context) (string, string) {
	lib := "github.com/go-dsync/dsync (this tree"
	if d.rev != "" {
		lib += ", " + d.rev
	}
	lib += ")"
	if d.poll != 0 {
		lib += fmt.Sprintf(", WithPollInterval(%v)", d.poll)
	}
	if d.wakeups != "" {
		lib += fmt.Sprintf(", WithWakeups(%v)", d.wakeups == "on")
	}
	if d.hints {
		lib += fmt.Sprintf(", ClientWithHints(%q, \"\")", hintsListen)
	}
	if d.noHints {
		lib += `, ClientWithHints("", "")`
	}
	if d.readLinger {
		lib += ", RWMutex WithReadLinger(the renew interval)"
	}
	if d.server != "" {
		return lib, d.server
	}
	return lib, describeServer(ctx, d.uri)
}

// describeServer names the server behind uri and its version.
func describeServer(ctx context.Context, uri string) string {
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return "MongoDB-compatible server (unknown version)"
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	var info bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return "MongoDB-compatible server (unknown version)"
	}
	_, isFerret := info["ferretdbFeatures"]
	if fv, ok := info["ferretdbVersion"]; ok && fv != "unknown" {
		return fmt.Sprintf("FerretDB %v (reports MongoDB %v)", fv, info["version"])
	}
	if isFerret {
		return fmt.Sprintf("FerretDB %s, SQLite handler, embedded (reports MongoDB %v)", ferretserve.Version(), info["version"])
	}
	return fmt.Sprintf("MongoDB %v", info["version"])
}

// meteredDialer counts the bytes of every connection it makes.
type meteredDialer struct{ m *harness.Meter }

func (md meteredDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return md.m.Conn(c), nil
}

// monitor reports every command to m. A findAndModify is a session
// renewal, except the server-time samples' of the "#clock" document,
// reported as "clock sample"; a find of a session's revocation record
// (an _id under "#revoke/") is reported as "revoke check", so that the
// lease's upkeep stands apart from the reads a scenario makes.
func monitor(m *harness.Meter) *event.CommandMonitor {
	var mu sync.Mutex
	names := make(map[int64]string) // by request ID, while in flight
	name := func(id int64) string {
		mu.Lock()
		defer mu.Unlock()
		n := names[id]
		delete(names, id)
		return n
	}
	return &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			n := e.CommandName
			if id, err := e.Command.LookupErr("query", "_id"); err == nil && n == "findAndModify" && id.StringValue() == "#clock" {
				n = "clock sample"
			}
			if n == "find" && isRevokeCheck(e.Command) {
				n = "revoke check"
			}
			mu.Lock()
			names[e.RequestID] = n
			mu.Unlock()
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			m.Command(name(e.RequestID), e.Duration, false)
		},
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			m.Command(name(e.RequestID), e.Duration, true)
		},
	}
}

// isRevokeCheck reports whether a find reads a session's revocation
// record (an _id under "#revoke/", dsync/mongo's revoke.go).
func isRevokeCheck(cmd bson.Raw) bool {
	id, err := cmd.LookupErr("filter", "_id")
	if err != nil {
		return false
	}
	s, ok := id.StringValueOK()
	return ok && strings.HasPrefix(s, "#revoke/")
}

// A conn is one simulated process: its MongoDB client, and its dsync
// Client for each TTL the scenario asks for (one, in every scenario so
// far: the lease is the Client's), each over a store of its own.
type conn struct {
	d      *driver
	client *mongo.Client
	db     *mongo.Database
	ns     string

	mu        sync.Mutex
	locks     map[time.Duration]*lease
	elections []*leader.Election
}

// lease is a conn's Client of one TTL, its store, and the member store of
// its elections (nil until the first).
type lease struct {
	c       *dsync.Client
	renew   time.Duration // the Client's renew interval: a third of its TTL, dsync's default
	store   *dsyncmongo.Store
	members *leadermongo.Store
	// setMutexes are the Mutexes of the keys of lock sets, by key
	// (lockset.go).
	setMutexes map[string]*dsync.Mutex
}

// lease returns c's Client of a lease of ttl, making it.
func (c *conn) lease(ttl time.Duration) (*lease, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.locks[ttl]; l != nil {
		return l, nil
	}
	store, err := dsyncmongo.NewStore(c.db, c.d.storeOptions(c.ns)...)
	if err != nil {
		return nil, err
	}
	lc, err := dsync.NewClient(store, c.d.clientOptions(c.ns, ttl)...)
	if err != nil {
		return nil, err
	}
	l := &lease{c: lc, store: store, renew: ttl / 3}
	c.locks[ttl] = l
	return l, nil
}

func (d *driver) Connect(ctx context.Context, m *harness.Meter, ns string) (harness.Conn, error) {
	client, err := mongo.Connect(options.Client().ApplyURI(d.uri).
		SetMonitor(processTracer().traceMonitor(monitor(m))).
		SetDialer(meteredDialer{m}))
	if err != nil {
		return nil, err
	}
	db := client.Database(d.db)
	return &conn{d: d, client: client, db: db, ns: ns, locks: make(map[time.Duration]*lease)}, nil
}

var quiet = slog.New(slog.DiscardHandler)

func (c *conn) NewMutex(key string, ttl time.Duration) (harness.Locker, error) {
	l, err := c.lease(ttl)
	if err != nil {
		return nil, err
	}
	mu, err := dsync.NewMutex(l.c, key)
	if err != nil {
		return nil, err
	}
	if t := processTracer(); t != nil {
		return tracedMutex{mutex{mu}, t}, nil
	}
	return mutex{mu}, nil
}

func (c *conn) NewElection(name string, ttl time.Duration) (harness.Locker, error) {
	l, err := c.lease(ttl)
	if err != nil {
		return nil, err
	}
	ms, err := c.memberStore(l)
	if err != nil {
		return nil, err
	}
	e, err := leader.NewElection(l.c, name, leader.WithMembers(ms), leader.WithLogger(quiet))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.elections = append(c.elections, e)
	c.mu.Unlock()
	return &election{e: e}, nil
}

// memberStore returns the member store of l's elections, in the
// scenario's member collection, making it.
func (c *conn) memberStore(l *lease) (*leadermongo.Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.members == nil {
		ms, err := leadermongo.NewStore(l.store, leadermongo.WithMembersCollection("members_"+c.ns))
		if err != nil {
			return nil, err
		}
		l.members = ms
	}
	return l.members, nil
}

// RenewCommands: a process renews its one session (claims, holds and
// waits alike) with one findAndModify per interval, whatever the number of
// locks (an insert after one of unknown outcome).
func (c *conn) RenewCommands() []string { return []string{"findAndModify"} }

// Drop removes the collections dsyncmongo and leadermongo named after the
// scenario's lock collection (the four of dsyncmongo's schema.go).
func (c *conn) Drop(ctx context.Context) error {
	return errors.Join(
		c.db.Collection("locks_"+c.ns).Drop(ctx),             // claims, end markers, floors
		c.db.Collection("locks_"+c.ns+"_sessions").Drop(ctx), // sessions
		c.db.Collection("locks_"+c.ns+"_events").Drop(ctx),   // wake-ups
		c.db.Collection("locks_"+c.ns+"_keys").Drop(ctx),     // the directory of keys
		c.db.Collection("locks_"+c.ns+"_records").Drop(ctx),  // stalls, outages, waits
		c.db.Collection("members_"+c.ns).Drop(ctx))
}

func (c *conn) Close() error {
	c.mu.Lock()
	for _, e := range c.elections {
		_ = e.Close()
	}
	for _, l := range c.locks {
		_ = l.c.Close()
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.client.Disconnect(ctx)
}

// mutex is a dsync.Mutex.
type mutex struct{ m *dsync.Mutex }

func (m mutex) Lock(ctx context.Context) error   { return m.m.LockContext(ctx) }
func (m mutex) Unlock(ctx context.Context) error { return m.m.UnlockContext(ctx) }

func (m mutex) TryLock(context.Context) (bool, error) { return m.m.TryLock(), nil }

func (m mutex) Lost() bool {
	select {
	case <-m.m.Lost():
		return m.m.Token() != 0 // a closed channel when not held means nothing
	default:
		return false
	}
}

func (c *conn) NewRWMutex(key string, ttl time.Duration) (harness.RWLocker, error) {
	l, err := c.lease(ttl)
	if err != nil {
		return nil, err
	}
	var opts []dsync.Option
	if c.d.readLinger {
		// The read linger is opt-in (off by default): dsync-linger turns
		// it on for its longest, the renew interval.
		opts = append(opts, dsync.WithReadLinger(l.renew))
	}
	rw, err := dsync.NewRWMutex(l.c, key, opts...)
	if err != nil {
		return nil, err
	}
	return rwmutex{rw}, nil
}

// rwmutex is a dsync.RWMutex's read side.
type rwmutex struct{ rw *dsync.RWMutex }

func (r rwmutex) RLock(ctx context.Context) error   { return r.rw.RLockContext(ctx) }
func (r rwmutex) RUnlock(ctx context.Context) error { return r.rw.RUnlockContext(ctx) }

func (c *conn) NewSemaphore(key string, limit int64, ttl time.Duration) (harness.Semaphore, error) {
	l, err := c.lease(ttl)
	if err != nil {
		return nil, err
	}
	s, err := dsync.NewSemaphore(l.c, key, limit)
	if err != nil {
		return nil, err
	}
	return semaphore{s}, nil
}

// semaphore is a dsync.Semaphore.
type semaphore struct{ s *dsync.Semaphore }

func (s semaphore) Acquire(ctx context.Context, n int64) error { return s.s.Acquire(ctx, n) }
func (s semaphore) Release(ctx context.Context, n int64) error { return s.s.ReleaseContext(ctx, n) }

// NewOnce returns a dsync.Once, whose Do has the harness's shape.
func (c *conn) NewOnce(key string) (harness.Once, error) {
	l, err := c.lease(dsync.DefaultTTL)
	if err != nil {
		return nil, err
	}
	return dsync.NewOnce(l.c, key)
}

// election is a leader.Election: Lock campaigns, Unlock resigns,
// Transfer transfers.
type election struct {
	e    *leader.Election
	mu   sync.Mutex
	term context.Context // the last term Lock won
}

func (e *election) Lock(ctx context.Context) error {
	lctx, err := e.e.Campaign(ctx)
	if err == nil {
		e.mu.Lock()
		e.term = lctx
		e.mu.Unlock()
	}
	return err
}

func (e *election) ID() string { return e.e.ID() }

// Transfer implements harness.Transferer.
func (e *election) Transfer(ctx context.Context, id string, ended func()) error {
	e.mu.Lock()
	term := e.term
	e.mu.Unlock()
	if term == nil {
		return leader.ErrNotLeader
	}
	stop := context.AfterFunc(term, ended)
	err := e.e.Transfer(ctx, id)
	if err != nil {
		stop()
	}
	return err
}

func (e *election) Unlock(ctx context.Context) error { return e.e.Resign(ctx) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
