//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/leader"
)

const statusUsage = `Usage: dsync status [NAME] [flags]

Lists the locks in the lock collection (the newest epoch of each key) and
the elections with their members: state, fencing token, holder (host and
pid), how long it has been held and how long until its lease expires,
judged in the server's time. With NAME, only the lock NAME and the
election NAME.

Flags:
  --seen D   list the election members seen within D (default 1m)
  (and the global flags; see 'dsync -h')

Exit status: 0; 1 if the server cannot be read or NAME is neither a lock
nor an election; 2: usage error.
`

var statusCmd = &command{
	name:    "status",
	summary: "list locks, their holders and the members of elections",
	usage:   statusUsage,
	run:     runStatus,
}

func runStatus(g *globals, args []string) int {
	fs := newFlagSet("status", g)
	seen := fs.Duration("seen", time.Minute, "")
	pos, _, code, err := parseArgs(fs, statusUsage, args, false)
	if err != nil {
		return code
	}
	switch {
	case len(pos) > 1:
		return usageError("status", fmt.Errorf("unexpected argument %q", pos[1]))
	case *seen <= 0:
		return usageError("status", fmt.Errorf("--seen must be positive, got %v", *seen))
	}
	name := ""
	if len(pos) == 1 {
		name = pos[0]
	}
	ctx := context.Background()
	client, db, err := g.connect(ctx)
	if err != nil {
		if errors.Is(err, errNoServer) {
			return fail("status", exitUsage, err)
		}
		return fail("status", exitFailure, err)
	}
	defer disconnect(client)
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	st, err := readStatus(ctx, g, db, name, *seen)
	if err != nil {
		return fail("status", exitFailure, err)
	}
	if name != "" && len(st.locks) == 0 && len(st.elections) == 0 {
		return fail("status", exitFailure, fmt.Errorf("no lock or election named %q in %s.%s", name, g.db, g.collection))
	}
	if len(st.locks) == 0 && len(st.elections) == 0 {
		fmt.Printf("no locks or elections in %s.%s\n", g.db, g.collection)
		return exitOK
	}
	st.write(os.Stdout, "")
	return exitOK
}

// lockDoc is an epoch document of dsyncmongo, as its package documentation
// describes it. status reads the collection itself, read-only: dsyncmongo
// has no call that lists keys.
type lockDoc struct {
	Key        string    `bson:"key"`
	Epoch      int64     `bson:"epoch"`
	Owner      string    `bson:"owner"`
	Host       string    `bson:"host"`
	PID        int       `bson:"pid"`
	AcquiredAt time.Time `bson:"acquiredAt"`
	ExpiresAt  time.Time `bson:"expiresAt"`
	Released   bool      `bson:"released"`
}

// A status is what `dsync status` shows.
type status struct {
	now       time.Time     // server time when read
	within    time.Duration // uncertainty of now
	locks     []lockDoc     // newest epoch of each plain lock, by key
	elections []election
}

type election struct {
	name    string
	lock    *lockDoc // newest epoch of leader.LockKey(name)
	members []leader.Member
}

// readStatus reads the locks (all, or the lock name and the election
// name) and the elections' members seen within seen.
func readStatus(ctx context.Context, g *globals, db *mongo.Database, name string, seen time.Duration) (*status, error) {
	sample, err := clockcheck.Measure(ctx, db, clockcheck.WithSamples(3))
	if err != nil {
		return nil, err
	}
	measured := time.Now()
	st := &status{within: sample.Uncertainty}
	// The server read its clock about half a round trip before the reply.
	serverNow := func() time.Time { return sample.ServerTime.Add(sample.RTT/2 + time.Since(measured)) }

	filter := bson.D{}
	if name != "" {
		filter = bson.D{{Key: "key", Value: bson.D{{Key: "$in", Value: bson.A{name, leader.LockKey(name)}}}}}
	}
	cur, err := db.Collection(g.collection).Find(ctx, filter,
		options.Find().SetSort(bson.D{{Key: "key", Value: 1}, {Key: "epoch", Value: -1}}))
	if err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", g.db, g.collection, err)
	}
	var docs []lockDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", g.db, g.collection, err)
	}
	for i := range docs {
		d := &docs[i]
		if i > 0 && docs[i-1].Key == d.Key {
			continue // an older epoch
		}
		if e, ok := strings.CutPrefix(d.Key, leader.LockKey("")); ok {
			st.elections = append(st.elections, election{name: e, lock: d})
		} else {
			st.locks = append(st.locks, *d)
		}
	}
	if len(st.elections) > 0 {
		b, err := g.leaderBackend(db)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		for i := range st.elections {
			e := &st.elections[i]
			if e.members, err = b.Members(ctx, e.name, seen); err != nil {
				return nil, err
			}
		}
	}
	st.now = serverNow()
	return st, nil
}

// state says whether d is held now: "held", "free" (released) or
// "expired" (its holder stopped renewing). A lease within the
// uncertainty of its expiry still counts as held.
func (st *status) state(d *lockDoc) string {
	switch {
	case d.Released:
		return "free"
	case d.ExpiresAt.Before(st.now.Add(-st.within)):
		return "expired"
	}
	return "held"
}

func (st *status) write(w io.Writer, indent string) {
	if len(st.locks) > 0 {
		t := newTable("LOCK", "STATE", ">TOKEN", "HOLDER", ">PID", ">HELD FOR", ">EXPIRES IN")
		for i := range st.locks {
			d := &st.locks[i]
			state := st.state(d)
			heldFor, left := "-", "-"
			if state == "held" {
				heldFor, left = fmtDur(st.now.Sub(d.AcquiredAt)), fmtDur(max(d.ExpiresAt.Sub(st.now), 0))
			}
			t.add(d.Key, state, strconv.FormatInt(d.Epoch, 10), d.Host, strconv.Itoa(d.PID), heldFor, left)
		}
		t.write(w, indent)
	}
	if len(st.elections) > 0 {
		if len(st.locks) > 0 {
			fmt.Fprintln(w)
		}
		t := newTable("ELECTION", "ROLE", ">TERM", "HOST", ">PID", "VERSION", ">LAST SEEN", ">EXPIRES IN")
		for _, e := range st.elections {
			leading := st.state(e.lock) == "held"
			term, left := strconv.FormatInt(e.lock.Epoch, 10), fmtDur(max(e.lock.ExpiresAt.Sub(st.now), 0))
			var first []string // the leader's row
			var standby [][]string
			for _, m := range e.members {
				row := []string{e.name, "standby", "", m.Host, strconv.Itoa(m.PID), dash(m.Version),
					fmtDur(max(st.now.Sub(m.LastSeen), 0)) + " ago", ""}
				if leading && m.ID == e.lock.Owner {
					row[1], row[2], row[7] = "leader", term, left
					first = row
				} else {
					standby = append(standby, row)
				}
			}
			switch {
			case first != nil:
			case leading: // the leader's status document is missing or stale
				first = []string{e.name, "leader", term, e.lock.Host, strconv.Itoa(e.lock.PID), "-", "-", left}
			default:
				first = []string{e.name, "no leader", "", "", "", "", "", ""}
			}
			t.add(first...)
			for _, row := range standby {
				t.add(row...)
			}
		}
		t.write(w, indent)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
