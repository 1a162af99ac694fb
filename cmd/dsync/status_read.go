//go:build unix

package main

// What dsync status reads, all of it through the library: the keys and
// their queues (dsync.Client.List, a stream), and, of an election, who
// leads and who stands by (leadermongo's Leader and Members). How the
// library stores them is its own business: status knows no document of
// it, so it shows what the library tells, and no more (the last holder of
// a lock that is free, say, it cannot tell).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/partitions"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// electionReads is how many times status reads an election's leader and
// lease when they disagree (see readElection).
const electionReads = 3

// readStatus reads the locks and the elections that sel selects, and the
// elections' members seen within seen, and hands each to out as it is
// read. It returns the summary for out.done, which it does not call.
func readStatus(ctx context.Context, g *globals, db *mongo.Database, sel selection, seen time.Duration, out statusSink) (statusSummary, error) {
	// The times shown are the server's, from hello, which needs no
	// privilege and writes nothing.
	sample, err := clockcheck.Measure(ctx, db, clockcheck.WithSamples(3))
	if err != nil {
		return statusSummary{}, err
	}
	measured := time.Now()
	// The server read its clock about half a round trip before the reply.
	serverNow := func() time.Time { return sample.ServerTime.Add(sample.RTT/2 + time.Since(measured)) }
	sum := statusSummary{within: sample.Uncertainty}

	if !collectionExists(ctx, db, g.collection) {
		sum.now = serverNow()
		return sum, nil
	}
	// Status reports what it reads; the library's own warnings would only
	// interleave with the table.
	locks, store, err := g.lockClient(db, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		return sum, err
	}
	defer locks.Close()
	members, err := g.memberStore(store)
	if err != nil {
		return sum, err
	}
	r := &statusReader{c: locks, members: members, seen: seen, now: serverNow, out: out, sum: &sum}
	reading := func(err error) error { return fmt.Errorf("reading %s.%s: %w", g.db, g.collection, err) }
	if sum.order, err = r.c.ListOrder(ctx); err != nil {
		return sum, reading(err)
	}
	if sel.after != "" && sum.order != dsync.OrderBytes {
		return sum, dsync.ErrAfterUnsupported
	}
	if sel.name != "" {
		err = r.named(ctx, sel.name)
	} else {
		err = r.list(ctx, sel)
	}
	if err != nil {
		return sum, reading(err)
	}
	sum.now = serverNow()
	return sum, nil
}

// A statusReader reads locks and elections for status, and hands them
// to out.
type statusReader struct {
	c       *dsync.Client
	members *leadermongo.Store
	seen    time.Duration
	now     func() time.Time // the server's time
	out     statusSink
	sum     *statusSummary
}

// list hands out the locks and elections of the keys sel selects, as the
// library lists them.
func (r *statusReader) list(ctx context.Context, sel selection) error {
	opts := dsync.ListOptions{Prefix: sel.prefix, After: sel.after}
	if sel.limit > 0 {
		opts.Limit = sel.limit + 1 // one more, to tell whether more follow
	}
	listed, last := 0, ""
	for ks, err := range r.c.List(ctx, opts) {
		if err != nil {
			return err
		}
		if sel.limit > 0 && listed == sel.limit {
			r.sum.more = true
			if r.sum.order == dsync.OrderBytes {
				r.sum.next = last
			}
			return nil
		}
		listed, last = listed+1, ks.Key
		if err := r.key(ctx, ks.Key, ks.Queue); err != nil {
			return err
		}
	}
	return nil
}

// key hands out the lock or the election of key, whose queue is q.
func (r *statusReader) key(ctx context.Context, key string, q []dsync.ClaimInfo) error {
	kind, name := primitiveOf(key)
	if kind == kindElection {
		e, err := r.readElection(ctx, name)
		if err != nil {
			return err
		}
		r.sum.elections++
		return r.out.election(e)
	}
	l := lockState{key: key, kind: kind, name: name}
	for i := range q {
		if q[i].Holds {
			l.holders = append(l.holders, &q[i])
		} else {
			l.waiting++
		}
	}
	if kind == kindOnce && len(q) == 0 {
		// Nothing holds or waits: the Once is done, or its runs failed
		// (or none ran to the end).
		once, err := dsync.NewOnce(r.c, name)
		if err != nil {
			return err
		}
		if l.done, err = once.Done(ctx); err != nil {
			return err
		}
	}
	l.now = r.now()
	r.sum.locks++
	return r.out.lock(l)
}

// named hands out every primitive named name (see keysNamed) that
// exists: whose key something holds or waits for, or that the library
// lists; then the shards of partition name that the library lists.
func (r *statusReader) named(ctx context.Context, name string) error {
	for _, key := range keysNamed(name) {
		if len(key) > dsyncmongo.MaxKeyLen {
			continue // no such primitive: its key would be too long
		}
		q, err := r.c.Queue(ctx, key)
		if err != nil {
			return err
		}
		if len(q) == 0 {
			if known, err := r.c.HasKey(ctx, key); err != nil {
				return err
			} else if !known {
				continue
			}
		}
		if err := r.key(ctx, key, q); err != nil {
			return err
		}
	}
	return r.shardsOf(ctx, name)
}

// shardsOf hands out the shards of partition name, the elections
// "name#I", as the library lists them.
func (r *statusReader) shardsOf(ctx context.Context, name string) error {
	for ks, err := range r.c.List(ctx, dsync.ListOptions{Prefix: leader.LockKey(name + "#")}) {
		if err != nil {
			return err
		}
		if p, _, ok := partitions.ShardOf(strings.TrimPrefix(ks.Key, leader.LockKey(""))); !ok || p != name {
			continue // a shard of another partition ("name#x#0"), or no shard
		}
		if err := r.key(ctx, ks.Key, ks.Queue); err != nil {
			return err
		}
	}
	return nil
}

// collectionExists reports whether db has the collection coll, so that
// status pointed at a database without one (a mistyped --db, say) lists
// nothing rather than create it: the store's first call creates the
// lock collection's index, and samples the server's clock with a write.
// When the server does not say (a user without the listCollections
// privilege), status goes on and lets the Client read.
func collectionExists(ctx context.Context, db *mongo.Database, coll string) bool {
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll}})
	return err != nil || len(names) > 0
}

// readElection reads who leads election name, the lease of that term, and
// the members seen within seen. The leader and the lease are two reads
// (Leader, then the lease key's Queue); a term that begins or ends
// between them makes them disagree, and they are read again, a few
// times. If they still disagree, the leader is shown as Leader told,
// with its lease if the queue still had it.
func (r *statusReader) readElection(ctx context.Context, name string) (election, error) {
	e := election{name: name}
	watcher, err := leader.NewElection(r.c, name, leader.WithMembers(r.members)) // campaigns never
	if err != nil {
		return e, err
	}
	defer watcher.Close()
	for range electionReads {
		info, err := watcher.Leader(ctx)
		nobody := errors.Is(err, leader.ErrNoLeader)
		if err != nil && !nobody {
			return e, err
		}
		q, err := r.c.Queue(ctx, leader.LockKey(name))
		if err != nil {
			return e, err
		}
		e.leader, e.lease = nil, nil
		if !nobody {
			e.leader = &info
			for i := range q {
				if q[i].Token == info.Token {
					e.lease = &q[i]
				}
			}
		}
		if nobody && len(q) == 0 || !nobody && len(q) > 0 && q[0].Token == info.Token {
			break
		}
	}
	e.members, err = r.members.Members(ctx, name, r.seen)
	e.now = r.now()
	return e, err
}
