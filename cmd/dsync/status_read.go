//go:build unix

package main

// What dsync status reads, all of it through the library: the keys of the
// lock collection (dsync.Client.Keys), each key's queue (Client.Queue),
// and, of an election, who leads and who stands by (leadermongo's Leader
// and Members). How the library stores them is its own business: status
// knows no document of it, so it shows what the library tells, and no
// more (the last holder of a lock that is free, say, it cannot tell).

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
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// keysPage is how many keys status asks the library for at a time.
const keysPage = 100

// electionReads is how many times status reads an election's leader and
// lease when they disagree (see readElection).
const electionReads = 3

// readStatus reads the locks and the elections (all, or the lock name and
// the election name), and the elections' members seen within seen.
func readStatus(ctx context.Context, g *globals, db *mongo.Database, name string, seen time.Duration) (*status, error) {
	// The times shown are the server's, from hello, which needs no
	// privilege and writes nothing.
	sample, err := clockcheck.Measure(ctx, db, clockcheck.WithSamples(3))
	if err != nil {
		return nil, err
	}
	measured := time.Now()
	st := &status{within: sample.Uncertainty}
	// The server read its clock about half a round trip before the reply.
	serverNow := func() time.Time { return sample.ServerTime.Add(sample.RTT/2 + time.Since(measured)) }

	if !collectionExists(ctx, db, g.collection) {
		st.now = serverNow()
		return st, nil
	}
	// Status reports what it reads; the backend's own warnings would only
	// interleave with the table.
	locks, err := g.lockBackend(db, dsyncmongo.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	defer locks.Close()
	elections, err := g.electionBackend(locks)
	if err != nil {
		return nil, err
	}
	c := locks.Client()
	reading := func(err error) error { return fmt.Errorf("reading %s.%s: %w", g.db, g.collection, err) }
	keys, err := listKeys(ctx, c, name)
	if err != nil {
		return nil, reading(err)
	}
	for _, key := range keys {
		if e, ok := strings.CutPrefix(key, leader.LockKey("")); ok {
			if e == "" {
				continue // no election has an empty name
			}
			el, err := readElection(ctx, c, elections, e, seen)
			if err != nil {
				return nil, reading(err)
			}
			st.elections = append(st.elections, el)
			continue
		}
		// Every other key is a lock's, namespaced ones ("dsync:...")
		// included: they are shown as stored.
		q, err := c.Queue(ctx, key)
		if err != nil {
			return nil, reading(err)
		}
		l := lockState{key: key}
		if len(q) > 0 {
			l.holder, l.waiting = &q[0], len(q)-1
		}
		st.locks = append(st.locks, l)
	}
	st.now = serverNow()
	return st, nil
}

// collectionExists reports whether db has the collection coll, so that
// status pointed at a database without one (a mistyped --db, say) lists
// nothing rather than create it: the backend's first call creates the
// lock collection's index, and samples the server's clock with a write.
// When the server does not say (a user without the listCollections
// privilege), status goes on and lets the backend read.
func collectionExists(ctx context.Context, db *mongo.Database, coll string) bool {
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll}})
	return err != nil || len(names) > 0
}

// listKeys returns the keys status shows, in order: every key of the
// store, a page at a time, or, with a name, those of the lock name and
// the election name that the store has.
func listKeys(ctx context.Context, c *dsync.Client, name string) ([]string, error) {
	var keys []string
	if name != "" {
		for _, k := range []string{name, leader.LockKey(name)} {
			if len(k) > dsyncmongo.MaxKeyLen {
				continue // no such lease: the election name is too long
			}
			// The first key with k as a prefix is k itself, if the
			// store has it.
			found, err := c.Keys(ctx, k, "", 1)
			if err != nil {
				return nil, err
			}
			if len(found) == 1 && found[0] == k {
				keys = append(keys, k)
			}
		}
		return keys, nil
	}
	after := ""
	for {
		page, err := c.Keys(ctx, "", after, keysPage)
		if err != nil {
			return nil, err
		}
		keys = append(keys, page...)
		if len(page) < keysPage {
			return keys, nil
		}
		after = page[len(page)-1]
	}
}

// readElection reads who leads election name, the lease of that term, and
// the members seen within seen. The leader and the lease are two reads
// (Leader, then the lease key's Queue); a term that begins or ends
// between them makes them disagree, and they are read again, a few
// times. If they still disagree, the leader is shown as Leader told,
// with its lease if the queue still had it.
func readElection(ctx context.Context, c *dsync.Client, b *leadermongo.Backend, name string, seen time.Duration) (election, error) {
	e := election{name: name}
	for range electionReads {
		info, err := b.Leader(ctx, name)
		nobody := errors.Is(err, leader.ErrNoLeader)
		if err != nil && !nobody {
			return e, err
		}
		q, err := c.Queue(ctx, leader.LockKey(name))
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
	var err error
	e.members, err = b.Members(ctx, name, seen)
	return e, err
}
