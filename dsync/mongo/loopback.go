package dsyncmongo

import (
	"context"
	"log/slog"
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Whether this process reaches the deployment over loopback
// (driver.LoopbackReporter), on which dsync turns direct hints on by
// default. The driver does not say which addresses it connects to, so
// the servers are asked, once, as the store is prepared: whatsmyuri
// tells the address a server sees this connection come from, which is a
// loopback address only when the connection came over loopback (from
// this network namespace: a server elsewhere sees another); and on a
// replica set, hello lists the members the driver connects to, each of
// which must be named by a loopback address too (every member on this
// machine). A sharded cluster never counts: a mongos on each
// application's machine, reached over loopback, is a common deployment,
// whose processes run on many machines. A server that does not answer
// (whatsmyuri, or hello on a replica set) counts as not reached over
// loopback.

var _ driver.LoopbackReporter = (*Store)(nil)

// Loopback implements driver.LoopbackReporter: whether, as the store was
// prepared, every server of the deployment was reached over loopback
// and the deployment is not a sharded cluster. False before.
func (s *Store) Loopback() bool { return s.loopback.Load() }

// reachLocked detects, once, whether the deployment is reached over
// loopback, as Prepare prepares the store (a Client's reads, which
// PrepareRead prepares for, have no use for it); s.sem is held, and the
// deployment probed.
func (s *Store) reachLocked(ctx context.Context) error {
	if s.reached {
		return nil
	}
	loopback, err := s.detectLoopback(ctx, s.topo)
	if err != nil {
		return err
	}
	s.loopback.Store(loopback)
	s.reached = true
	return nil
}

// detectLoopback is what Loopback reports once the store is prepared on
// a deployment of kind topo. It fails only when ctx ends.
func (s *Store) detectLoopback(ctx context.Context, topo topology) (bool, error) {
	if topo == topologySharded {
		return false, nil
	}
	var me struct {
		You string `bson:"you"`
	}
	err := s.db.RunCommand(ctx, bson.D{{Key: "whatsmyuri", Value: 1}}).Decode(&me)
	if s.cfg.seenFrom != nil {
		me.You, err = *s.cfg.seenFrom, nil
	}
	if err != nil && ctx.Err() != nil {
		return false, wrap(ctx, "whatsmyuri on", s.db.Name(), err)
	}
	if err != nil || !loopbackAddr(me.You) {
		s.cfg.logger.Debug("dsyncmongo: the server is not reached over loopback", slog.String("seen from", me.You), slog.Any("err", err))
		return false, nil
	}
	if topo != topologyReplicas {
		return true, nil
	}
	var hello struct {
		Hosts    []string `bson:"hosts"`
		Passives []string `bson:"passives"`
		Arbiters []string `bson:"arbiters"`
	}
	if err := s.db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		if ctx.Err() != nil {
			return false, wrap(ctx, "hello on", s.db.Name(), err)
		}
		return false, nil
	}
	return loopbackMembers(append(append(hello.Hosts, hello.Passives...), hello.Arbiters...)), nil
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
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		// "::1:27017": the port after the last colon.
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return false
		}
		host = addr[:i]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
