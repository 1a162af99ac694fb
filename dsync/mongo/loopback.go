package dsyncmongo

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Whether this process reaches the deployment over loopback
// (driver.LoopbackReporter), on which dsync turns direct hints on by
// default. The driver does not say which addresses it connects to, so
// the servers are asked, once, when dsync first asks (in the background,
// off the path of any Lock: not as the store is prepared): whatsmyuri
// tells the address a server sees this connection come from, which is a
// loopback address only when the connection came over loopback; on
// Linux it must also be the local address of one of this process's own
// sockets, not a proxy's on the server's machine (ownsocket.go). On a
// replica set, hello lists the members the driver connects to, each of
// which must be named by a loopback address too (every member on this
// machine). A sharded cluster never counts: a mongos on each
// application's machine, reached over loopback, is a common deployment,
// whose processes run on many machines. Nor does FerretDB on PostgreSQL
// (FerretDB 2, or 1 whose plans are PostgreSQL's): a FerretDB beside
// each application, over one PostgreSQL database, is reached over
// loopback from many machines too; FerretDB 1 on SQLite counts, since
// its data is that one process's. A server that does not answer
// (whatsmyuri, hello on a replica set, explain on FerretDB 1) counts as
// not reached over loopback, and the store says so at Info.

// errNoBackend: explain's plan, on FerretDB 1, names no backend (the
// lock collection is not made yet, or a release whose plans differ).
var errNoBackend = errors.New("the plan of a find names neither SQLite nor PostgreSQL")

// loopbackRole is the store's driver.LoopbackReporter.
type loopbackRole struct{ s *Store }

// Loopback implements driver.LoopbackReporter: whether every server of
// the deployment is reached over loopback and the deployment is neither
// a sharded cluster nor FerretDB on PostgreSQL. It prepares the store,
// then asks the deployment under the store's preparation lock, once: a
// Prepare meanwhile waits only if the store is not prepared (the clock
// restarted). Not in Prepare: a fresh process's first Lock would wait for
// the commands (whatsmyuri, explain on FerretDB).
func (r loopbackRole) Loopback(ctx context.Context) bool {
	s := r.s
	if _, err := s.prepare(ctx); err != nil {
		return false
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer func() { <-s.sem }()
	if s.closed.Load() {
		return false
	}
	return s.platform.reach(ctx) == nil && s.platform.loopback.Load()
}

// reach detects, once, whether the deployment is reached over loopback;
// the store's preparation lock is held, the deployment probed and the
// lock collection made if the store makes it (Loopback prepared the
// store).
func (p *platform) reach(ctx context.Context) error {
	if p.reached {
		return nil
	}
	loopback, err := p.detectLoopback(ctx)
	if err != nil {
		return err
	}
	p.loopback.Store(loopback)
	p.reached = true
	return nil
}

// detectLoopback is what Loopback reports once the store is prepared. It
// fails only when ctx ends. Each check below that finds the deployment
// not reached over loopback (or cannot tell) ends the detection.
func (p *platform) detectLoopback(ctx context.Context) (bool, error) {
	if p.topo == topologySharded {
		return false, nil
	}
	if ok, err := p.seenOverLoopback(ctx); !ok || err != nil {
		return false, err
	}
	if p.topo == topologyReplicas {
		if ok, err := p.membersOnLoopback(ctx); !ok || err != nil {
			return false, err
		}
	}
	if p.ferretRelease == 0 {
		return true, nil
	}
	return p.ferretDataLocal(ctx)
}

// seenOverLoopback reports whether the server sees this connection come
// from a loopback address that is one of this process's own sockets (not
// a proxy's on the server's machine). It fails only when ctx ends.
func (p *platform) seenOverLoopback(ctx context.Context) (bool, error) {
	var me struct {
		You string `bson:"you"`
	}
	err := p.cfg.fault("whatsmyuri")
	if err == nil {
		err = p.db.RunCommand(ctx, bson.D{{Key: "whatsmyuri", Value: 1}}).Decode(&me)
		if t := p.cfg.test; t != nil && t.seenFrom != nil {
			me.You, err = *t.seenFrom, nil
		}
	}
	if err != nil {
		return false, p.cannotTell(ctx, "whatsmyuri", err)
	}
	if !loopbackAddr(me.You) {
		p.notLoopback("the server sees this process come from another address", slog.String("seen from", me.You))
		return false, nil
	}
	if ours, err := ourConnection(me.You); err != nil || !ours {
		// A proxy on the server's machine (or /proc unreadable).
		p.notLoopback("the loopback address the server sees is no connection of this process", slog.String("seen from", me.You), slog.Any("err", err))
		return false, nil
	}
	return true, nil
}

// membersOnLoopback reports whether every member of the replica set, as
// hello lists them, is named by a loopback address: the driver connects
// to each, so each must be on this machine. It fails only when ctx ends.
func (p *platform) membersOnLoopback(ctx context.Context) (bool, error) {
	var hello struct {
		Hosts    []string `bson:"hosts"`
		Passives []string `bson:"passives"`
		Arbiters []string `bson:"arbiters"`
	}
	err := p.cfg.fault("hello")
	if err == nil {
		err = p.db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello)
	}
	if err != nil {
		return false, p.cannotTell(ctx, "hello", err)
	}
	members := append(append(hello.Hosts, hello.Passives...), hello.Arbiters...)
	if !loopbackMembers(members) {
		p.notLoopback("a member of the replica set is not on loopback", slog.Any("members", members))
		return false, nil
	}
	return true, nil
}

// ferretDataLocal reports whether FerretDB keeps its data in SQLite, that
// one process's own: on PostgreSQL, FerretDB processes on other machines
// may share it. It fails only when ctx ends.
func (p *platform) ferretDataLocal(ctx context.Context) (bool, error) {
	backend, err := p.ferretBackend(ctx)
	if err == nil && backend == backendUnknown {
		err = errNoBackend
	}
	if err != nil {
		return false, p.cannotTell(ctx, "explain", err)
	}
	if backend != backendSQLite {
		p.notLoopback("FerretDB on PostgreSQL: FerretDB processes on other machines may share its data", slog.Int("release", p.ferretRelease))
		return false, nil
	}
	return true, nil
}

// cannotTell handles the failure of cmd, a command asked to tell whether
// the deployment is reached over loopback: the cause of ctx if it ended,
// else nil, having said at Info that the store counts as not reached
// over loopback (once: the store asks once).
func (p *platform) cannotTell(ctx context.Context, cmd string, err error) error {
	if ctx.Err() != nil {
		return wrap(ctx, cmd+" on", p.db.Name(), err)
	}
	p.cfg.logger.Info("dsyncmongo: cannot tell whether the server is reached over loopback: direct hints stay off unless asked for",
		slog.String("command", cmd), slog.Any("err", err))
	return nil
}

// notLoopback says at Debug why the deployment does not count as
// reached over loopback.
func (p *platform) notLoopback(why string, attrs ...any) {
	p.cfg.logger.Debug("dsyncmongo: not reached over loopback: "+why, attrs...)
}

// loopbackMembers reports whether a replica set whose members hello
// lists as members (host:port each) has at least one, and each on
// loopback: named localhost, or by a loopback IP address.
func loopbackMembers(members []string) bool {
	for _, m := range members {
		host, _, err := net.SplitHostPort(m)
		if err != nil || !strings.EqualFold(host, "localhost") && !loopbackAddr(m) {
			return false
		}
	}
	return len(members) > 0
}

// loopbackAddr reports whether addr, host:port as a server tells it (an
// IPv6 host in brackets or not), names a loopback IP address.
func loopbackAddr(addr string) bool {
	ip, _, ok := splitAddr(addr)
	return ok && ip.IsLoopback()
}
