// Package latewrite makes a real command reach the server late, for the
// regression tests of "every write is harmless whenever it is applied":
// a request applied long after its sender gave up on it, and after later
// requests of the same sender, as TCP does with held-back bytes after a
// stall, and as the driver allows when it abandons an operation whose
// request it has already sent.
//
// A [Link] is a client to the test server through a proxy that can stall
// every request the client sends, and it keeps each command it sends
// while stalled. A kept command can then be applied through another
// client at the moment the test chooses ([Replay]), or the stalled bytes
// delivered as they were ([Link.Heal]). A [Router] wraps a dsyncmongo
// backend's store and sends one renewal's update through a Link and the
// rest directly, so a test can make a Mutex or an Election live through a
// late renewal.
//
// The integration suite's delay-requests fault delivers real bytes late
// too, but at a moment set by a delay; the regression tests built on this
// package need the late command to land at a moment they choose (right
// after a given renewal), which Replay gives.
package latewrite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/integration/faultproxy"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// A Link is a client to the shared test server through a proxy that can
// stall its requests.
type Link struct {
	// DB is the database of the same name as the one NewLink was given,
	// reached through the proxy.
	DB    *mongo.Database
	proxy *faultproxy.Proxy

	mu      sync.Mutex
	stalled bool
	kept    []bson.Raw // commands started while stalled, in order
	started chan struct{}
}

// NewLink opens a client through a new proxy to the shared server, to the
// database named like db. Both are closed in tb.Cleanup.
func NewLink(tb testing.TB, db *mongo.Database) *Link {
	tb.Helper()
	srv := mongotest.Shared(tb)
	hosts := options.Client().ApplyURI(srv.URI()).Hosts
	if len(hosts) != 1 {
		tb.Skipf("latewrite: needs a single-host server URI, got %d hosts", len(hosts))
	}
	p, err := faultproxy.New(hosts[0])
	if err != nil {
		tb.Fatalf("latewrite: proxy: %v", err)
	}
	l := &Link{proxy: p, started: make(chan struct{}, 64)}
	monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.stalled {
			l.kept = append(l.kept, append(bson.Raw(nil), e.Command...))
			select {
			case l.started <- struct{}{}:
			default:
			}
		}
	}}
	c := mongotest.NewClient(tb, srv.URI(), options.Client().
		SetHosts([]string{p.Addr()}).
		SetDirect(true).
		SetMonitor(monitor).
		// Writes are not retried on a new connection: a stalled request
		// stays the only copy of the write.
		SetRetryWrites(false).
		SetRetryReads(false))
	tb.Cleanup(func() { _ = p.Close() }) // before the client's disconnect: unblocks it
	l.DB = c.Database(db.Name())
	return l
}

// Stall holds back, from now on, everything the client sends, and keeps
// the commands it starts (AwaitKept).
func (l *Link) Stall() {
	l.mu.Lock()
	l.stalled = true
	l.mu.Unlock()
	l.proxy.Partition(faultproxy.Up)
}

// Heal ends the stall: the held requests reach the server, in order.
func (l *Link) Heal() {
	l.mu.Lock()
	l.stalled = false
	l.mu.Unlock()
	l.proxy.Heal()
}

// keptNamed returns the commands named name that the client started while
// stalled.
func (l *Link) keptNamed(name string) []bson.Raw {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []bson.Raw
	for _, c := range l.kept {
		if e, err := c.IndexErr(0); err == nil && e.Key() == name {
			out = append(out, c)
		}
	}
	return out
}

// AwaitKept waits until the client has started a command named name while
// stalled, and returns the first such command.
func (l *Link) AwaitKept(ctx context.Context, name string) (bson.Raw, error) {
	for {
		if k := l.keptNamed(name); len(k) > 0 {
			return k[0], nil
		}
		select {
		case <-l.started:
		case <-ctx.Done():
			return nil, fmt.Errorf("latewrite: no %s command sent while stalled: %w", name, context.Cause(ctx))
		}
	}
}

// Replay applies cmd, a command kept by a Link, through db's client: the
// request as its sender sent it, arriving now. The session and cluster
// time fields are the sender's connection's own and are dropped. It
// returns the server's reply.
func Replay(ctx context.Context, db *mongo.Database, cmd bson.Raw) (bson.M, error) {
	elems, err := cmd.Elements()
	if err != nil {
		return nil, err
	}
	var doc bson.D
	for _, e := range elems {
		switch e.Key() {
		case "lsid", "$clusterTime", "$db", "txnNumber", "$readPreference":
			continue
		}
		doc = append(doc, bson.E{Key: e.Key(), Value: e.Value()})
	}
	var reply bson.M
	err = db.RunCommand(ctx, doc).Decode(&reply)
	return reply, err
}

// Router wraps the store of a dsyncmongo backend (Option installs it):
// it passes every call on, except for the session renewals that
// RenewLate routes elsewhere. It knows the driver's sessions schema: the
// document of a session's generation gen is its ID, then ID~gen.
type Router struct {
	driver.Store // the direct path

	// late is the sessions collection through a stalled Link, where the
	// renewal RenewLate stalls sends its update, raised with $max as the
	// driver's renewal is. giveUp bounds that renewal, as a driver gives
	// up on an operation when its heartbeats time out: the call fails,
	// the request stays sent.
	late   *mongo.Collection
	giveUp time.Duration

	mu      sync.Mutex
	route   route
	renewed chan renewal
}

// A route says where renewals go.
type route int

const (
	direct  route = iota // to the direct store
	viaLate              // the next one through late, then direct again
	down                 // nowhere: they fail, as if the network were down
)

// A renewal is one the Router passed on directly and saw succeed.
type renewal struct {
	sent time.Time // local, with a monotonic reading
}

var errDown = errors.New("latewrite: renewal path down")

// NewRouter returns a Router whose stalled renewal updates the session's
// document in late, a sessions collection reached through a Link, and is
// given up on after giveUp. Install it with Over.
func NewRouter(late *mongo.Collection, giveUp time.Duration) *Router {
	return &Router{late: late, giveUp: giveUp, renewed: make(chan renewal, 64)}
}

// Over returns store (a dsyncmongo.Store) for dsync.NewClient, such that
// the Client calls it through r.
func (r *Router) Over(store driver.Store) driver.Store {
	return clienthook.Wrap(store, clienthook.Settings{WrapStore: func(s driver.Store) driver.Store {
		r.Store = s
		return r
	}})
}

// Roles implements driver.Store: the store's roles but the record of
// up-time (driver.UptimeStore), whose renewals the Router does not route.
// Without it the Client has no outage grace and renews through
// RenewSession, the path the late-renewal fault is played on.
func (r *Router) Roles() driver.Roles {
	roles := r.Store.Roles()
	roles.Uptime = nil
	return roles
}

func (r *Router) next(rt route) {
	r.mu.Lock()
	r.route = rt
	r.mu.Unlock()
}

// take returns where the next renewal goes.
func (r *Router) take() route {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.route
	if rt == viaLate {
		r.route = direct
	}
	return rt
}

// RenewSession implements driver.Store.
func (r *Router) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	switch r.take() {
	case viaLate:
		lctx, cancel := context.WithTimeout(ctx, r.giveUp)
		defer cancel()
		doc := id
		if gen > 0 {
			doc = fmt.Sprintf("%s~%d", id, gen)
		}
		_, err := r.late.UpdateOne(lctx, bson.D{{Key: "_id", Value: doc}},
			bson.D{{Key: "$max", Value: bson.D{{Key: "expiresAt", Value: expires}}}})
		if err == nil {
			return false, errors.New("latewrite: the stalled renewal was not stalled")
		}
		return false, err
	case down:
		return false, errDown
	}
	sent := time.Now()
	found, err := r.Store.RenewSession(ctx, id, gen, expires)
	if err == nil && found {
		r.renewedAt(sent)
	}
	return found, err
}

// InsertSession implements driver.Store: a generation above 0 is a
// renewal's (the one after a renewal of unknown outcome).
func (r *Router) InsertSession(ctx context.Context, s driver.Session) error {
	if s.Gen > 0 {
		r.mu.Lock()
		rt := r.route
		r.mu.Unlock()
		if rt == down {
			return errDown
		}
	}
	sent := time.Now()
	err := r.Store.InsertSession(ctx, s)
	if err == nil && s.Gen > 0 {
		r.renewedAt(sent)
	}
	return err
}

func (r *Router) renewedAt(sent time.Time) {
	select {
	case r.renewed <- renewal{sent: sent}:
	default:
	}
}

// awaitRenewal waits for a successful direct renewal sent at or after t,
// skipping earlier ones.
func (r *Router) awaitRenewal(ctx context.Context, t time.Time) (renewal, error) {
	for {
		select {
		case rn := <-r.renewed:
			if !rn.sent.Before(t) {
				return rn, nil
			}
		case <-ctx.Done():
			return renewal{}, fmt.Errorf("latewrite: no renewal sent after %v: %w", t, context.Cause(ctx))
		}
	}
}

// RenewLate plays the late-renewal fault on a holder that renews through r:
// its next renewal goes through link, which is stalled, and is given up
// on; later renewals go directly, until one is sent gap or more after the
// stalled one; then every renewal fails (the holder's network is down
// again) and the stalled renewal is applied through db. It returns when
// the stalled renewal was sent, and an error unless that renewal, applied
// late, matched one session: the fault must happen for a test to mean
// anything.
func (r *Router) RenewLate(ctx context.Context, link *Link, db *mongo.Database, gap time.Duration) (time.Time, error) {
	link.Stall()
	r.next(viaLate)
	stalled, err := link.AwaitKept(ctx, "update")
	if err != nil {
		return time.Time{}, err
	}
	sent := time.Now()
	if _, err := r.awaitRenewal(ctx, sent.Add(gap)); err != nil {
		return sent, err
	}
	r.next(down)
	reply, err := Replay(ctx, db, stalled)
	if err != nil {
		return sent, fmt.Errorf("latewrite: delivering the stalled renewal: %w", err)
	}
	if n, _ := reply["n"].(int32); n != 1 {
		return sent, fmt.Errorf("latewrite: the stalled renewal, delivered late, matched %v sessions, want 1: the fault did not happen", reply["n"])
	}
	return sent, nil
}
