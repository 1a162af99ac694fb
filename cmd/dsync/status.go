//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/leader"
)

const statusUsage = `Usage: dsync status [NAME] [flags]

Lists the locks in the lock collection (the newest epoch of each key) and
the elections in the election collection with their members, judged in
the server's time:

  STATE      held; free (released); expired (its holder stopped renewing:
             crashed, or cut off from the server)
  TOKEN      the fencing token of the newest hold (an election's TERM)
  HOST, PID  the process holding the lock or leading: dsync lock or dsync
             elect, or a program using the library; "-" when nobody holds
  CMD PID    the command that dsync runs under the lock, for holders on
             this machine (found among the holder's child processes)
  LAST SEEN  a candidate's last heartbeat

Names longer than 40 characters are cut short in the table; --json shows
them whole. With NAME (after '--' if it starts with '-'), only the lock
NAME and the election NAME.

Flags:
  --seen D   list the election members whose last heartbeat is at most D
             old (default %v: three heartbeats of a candidate with the
             default --ttl; dsync elect heartbeats at least every %v)
  --json     print one JSON object instead of tables
  (and the global flags; see 'dsync -h')

Exit status: 0; 1 if the server cannot be read or NAME is neither a lock
nor an election; 2: usage error.
`

// defaultSeen is how recent a member's heartbeat must be for status to
// list it: three heartbeats of a candidate with the default TTL, which is
// how long leader.Election.Members counts one live.
const defaultSeen = leader.DefaultTTL

// Table cells are cut to these widths (in characters), so that one long
// name does not make every line hundreds of columns wide.
const (
	maxNameWidth    = 40
	maxHostWidth    = 30
	maxVersionWidth = 20
)

var statusCmd = &command{
	name:    "status",
	summary: "list locks, their holders and the members of elections",
	usage:   statusHelp,
	run:     runStatus,
}

var statusHelp = fmt.Sprintf(statusUsage, defaultSeen, maxHeartbeat)

func runStatus(g *globals, args []string) int {
	fs := newFlagSet("status", g)
	seen := fs.Duration("seen", defaultSeen, "")
	asJSON := fs.Bool("json", false, "")
	pos, _, code, err := parseArgs(fs, statusHelp, args, false)
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
		if err := checkName(name, maxLockName); err != nil {
			return usageError("status", err)
		}
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
		return fail("status", exitFailure, fmt.Errorf("no lock or election named %q in %s.%s or %s.%s", name, g.db, g.collection, g.db, g.elections))
	}
	st.findCommands()
	if *asJSON {
		if err := st.writeJSON(os.Stdout); err != nil {
			return fail("status", exitFailure, err)
		}
		return exitOK
	}
	if len(st.locks) == 0 && len(st.elections) == 0 {
		fmt.Printf("no locks or elections in %s.%s or %s.%s\n", g.db, g.collection, g.db, g.elections)
		return exitOK
	}
	if st.write(os.Stdout, "") {
		fmt.Printf("\n(names cut to %d characters; 'dsync status --json' shows them whole)\n", maxNameWidth)
	}
	return exitOK
}

// lockDoc is an epoch document of dsyncmongo, as its package documentation
// describes it, in the lock collection or (an election's lease) in the
// election collection. status reads the collections itself, read-only:
// dsyncmongo has no call that lists keys.
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

	// commands are the pids of the commands that holders on this host
	// run, by holder pid (see findCommands).
	commands map[int]int
}

type election struct {
	name    string
	lock    *lockDoc // newest epoch of leader.LockKey(name), in the election collection
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

	// Every key of the lock collection is a lock, whatever its name: the
	// leases of elections are in a collection of their own.
	lockFilter, leaseFilter := bson.D{}, bson.D{}
	if name != "" {
		lockFilter = bson.D{{Key: "key", Value: name}}
		leaseFilter = bson.D{{Key: "key", Value: leader.LockKey(name)}}
	}
	locks, err := newestEpochs(ctx, db, g.collection, lockFilter)
	if err != nil {
		return nil, err
	}
	st.locks = locks
	leases, err := newestEpochs(ctx, db, g.elections, leaseFilter)
	if err != nil {
		return nil, err
	}
	for i := range leases {
		// A key without the prefix is no election's lease: a lock someone
		// took on an election backend. It is not listed.
		if e, ok := strings.CutPrefix(leases[i].Key, leader.LockKey("")); ok {
			st.elections = append(st.elections, election{name: e, lock: &leases[i]})
		}
	}
	if len(st.elections) > 0 {
		// Status reports what it reads; the backend's own warnings would
		// only interleave with the table.
		b, err := g.leaderBackend(db, dsyncmongo.WithLogger(slog.New(slog.DiscardHandler)))
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

// newestEpochs reads the newest epoch document of each key in collection
// coll that filter selects, sorted by key.
func newestEpochs(ctx context.Context, db *mongo.Database, coll string, filter bson.D) ([]lockDoc, error) {
	cur, err := db.Collection(coll).Find(ctx, filter,
		options.Find().SetSort(bson.D{{Key: "key", Value: 1}, {Key: "epoch", Value: -1}}))
	if err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", db.Name(), coll, err)
	}
	var docs []lockDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", db.Name(), coll, err)
	}
	var newest []lockDoc
	for i := range docs {
		if i > 0 && docs[i-1].Key == docs[i].Key {
			continue // an older epoch
		}
		newest = append(newest, docs[i])
	}
	return newest, nil
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

// findCommands finds the commands that holders and candidates on this
// host run: a dsync lock or dsync elect process has one child, its
// command. The lock documents have the holder's pid only.
func (st *status) findCommands() {
	host, err := os.Hostname()
	if err != nil {
		return
	}
	var pids []int
	for i := range st.locks {
		if d := &st.locks[i]; d.Host == host && st.state(d) == "held" {
			pids = append(pids, d.PID)
		}
	}
	for _, e := range st.elections {
		for _, m := range e.members {
			if m.Host == host {
				pids = append(pids, m.PID)
			}
		}
	}
	if len(pids) > 0 {
		st.commands = childProcesses(pids)
	}
}

// commandPID is the pid of the command holder pid runs, as a cell.
func (st *status) commandPID(pid int) string {
	if c, ok := st.commands[pid]; ok {
		return strconv.Itoa(c)
	}
	return "-"
}

// write prints the tables, reporting whether a name was cut short.
func (st *status) write(w io.Writer, indent string) (cut bool) {
	cell := func(s string, width int) string {
		c, shortened := fitCellCut(s, width)
		cut = cut || shortened && width == maxNameWidth
		return c
	}
	if len(st.locks) > 0 {
		t := newTable("LOCK", "STATE", ">TOKEN", "HOST", ">PID", ">CMD PID", ">HELD FOR", ">EXPIRES IN")
		for i := range st.locks {
			d := &st.locks[i]
			state := st.state(d)
			host, pid, cmd, heldFor, left := "-", "-", "-", "-", "-"
			if state == "held" {
				host, pid, cmd = cell(d.Host, maxHostWidth), strconv.Itoa(d.PID), st.commandPID(d.PID)
				heldFor, left = fmtDur(st.now.Sub(d.AcquiredAt)), fmtDur(max(d.ExpiresAt.Sub(st.now), 0))
			}
			t.add(cell(d.Key, maxNameWidth), state, strconv.FormatInt(d.Epoch, 10), host, pid, cmd, heldFor, left)
		}
		t.write(w, indent)
	}
	if len(st.elections) > 0 {
		if len(st.locks) > 0 {
			fmt.Fprintln(w)
		}
		t := newTable("ELECTION", "ROLE", ">TERM", "HOST", ">PID", ">CMD PID", "VERSION", ">LAST SEEN", ">EXPIRES IN")
		for _, e := range st.elections {
			name := cell(e.name, maxNameWidth)
			leading := st.state(e.lock) == "held"
			term, left := strconv.FormatInt(e.lock.Epoch, 10), fmtDur(max(e.lock.ExpiresAt.Sub(st.now), 0))
			var first []string // the leader's row
			var standby [][]string
			for _, m := range e.members {
				row := []string{name, "standby", "", cell(m.Host, maxHostWidth), strconv.Itoa(m.PID), "-",
					cell(dash(m.Version), maxVersionWidth), fmtDur(max(st.now.Sub(m.LastSeen), 0)) + " ago", ""}
				if leading && m.ID == e.lock.Owner {
					row[1], row[2], row[5], row[8] = "leader", term, st.commandPID(m.PID), left
					first = row
				} else {
					standby = append(standby, row)
				}
			}
			switch {
			case first != nil:
			case leading: // the leader's status document is missing or stale
				first = []string{name, "leader", term, cell(e.lock.Host, maxHostWidth), strconv.Itoa(e.lock.PID), "-", "-", "-", left}
			default:
				first = []string{name, "no leader", "", "", "", "", "", "", ""}
			}
			t.add(first...)
			for _, row := range standby {
				t.add(row...)
			}
		}
		t.write(w, indent)
	}
	return cut
}

// fitCell makes s fit a table cell of width characters: control
// characters quoted, and cut short with "…".
func fitCell(s string, width int) string {
	c, _ := fitCellCut(s, width)
	return c
}

// fitCellCut is fitCell, also reporting whether s was cut short (not
// merely quoted).
func fitCellCut(s string, width int) (string, bool) {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) && r != ' ' }) >= 0 {
		s = strconv.Quote(s)
	}
	if utf8.RuneCountInString(s) <= width {
		return s, false
	}
	return string([]rune(s)[:width-1]) + "…", true
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// The JSON of dsync status --json. Times are the server's, durations in
// milliseconds.
type (
	jsonStatus struct {
		ServerTime    time.Time      `json:"serverTime"`
		UncertaintyMS float64        `json:"uncertaintyMs"`
		Locks         []jsonLock     `json:"locks"`
		Elections     []jsonElection `json:"elections"`
	}
	jsonLock struct {
		Name  string `json:"name"`
		State string `json:"state"` // held, free, expired
		Token int64  `json:"token"`
		// Holder is who holds it; LastHolder who held it last, when
		// nobody does.
		Holder     *jsonHolder `json:"holder"`
		LastHolder *jsonHolder `json:"lastHolder,omitempty"`
	}
	jsonHolder struct {
		Host       string    `json:"host"`
		PID        int       `json:"pid"`                  // the process holding the lease
		CommandPID int       `json:"commandPid,omitempty"` // the command it runs, when known
		AcquiredAt time.Time `json:"acquiredAt"`
		ExpiresAt  time.Time `json:"expiresAt"`
		HeldForMS  float64   `json:"heldForMs"`
		// ExpiresInMS is 0 once the lease has expired.
		ExpiresInMS float64 `json:"expiresInMs"`
	}
	jsonElection struct {
		Name    string       `json:"name"`
		Term    int64        `json:"term"`            // of the current or the last leader
		Leader  *jsonMember  `json:"leader"`          // null when nobody leads
		Members []jsonMember `json:"members"`         // seen within --seen, the leader included
		Lease   *jsonHolder  `json:"lease,omitempty"` // the leader's lease, when someone leads
	}
	jsonMember struct {
		ID         string    `json:"id"`
		Role       string    `json:"role"` // leader, standby
		Host       string    `json:"host"`
		PID        int       `json:"pid"`
		CommandPID int       `json:"commandPid,omitempty"`
		Version    string    `json:"version"`
		LastSeen   time.Time `json:"lastSeen"`
		AgoMS      float64   `json:"lastSeenAgoMs"`
	}
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (st *status) holder(d *lockDoc) *jsonHolder {
	return &jsonHolder{Host: d.Host, PID: d.PID, CommandPID: st.commands[d.PID], AcquiredAt: d.AcquiredAt, ExpiresAt: d.ExpiresAt,
		HeldForMS: ms(st.now.Sub(d.AcquiredAt)), ExpiresInMS: ms(max(d.ExpiresAt.Sub(st.now), 0))}
}

func (st *status) writeJSON(w io.Writer) error {
	out := jsonStatus{ServerTime: st.now, UncertaintyMS: ms(st.within), Locks: []jsonLock{}, Elections: []jsonElection{}}
	for i := range st.locks {
		d := &st.locks[i]
		l := jsonLock{Name: d.Key, State: st.state(d), Token: d.Epoch}
		if l.State == "held" {
			l.Holder = st.holder(d)
		} else {
			l.LastHolder = st.holder(d)
			l.LastHolder.CommandPID = 0
		}
		out.Locks = append(out.Locks, l)
	}
	for _, e := range st.elections {
		je := jsonElection{Name: e.name, Term: e.lock.Epoch, Members: []jsonMember{}}
		leading := st.state(e.lock) == "held"
		if leading {
			je.Lease = st.holder(e.lock)
		}
		for _, m := range e.members {
			jm := jsonMember{ID: m.ID, Role: "standby", Host: m.Host, PID: m.PID, Version: m.Version,
				LastSeen: m.LastSeen, AgoMS: ms(max(st.now.Sub(m.LastSeen), 0))}
			if leading && m.ID == e.lock.Owner {
				jm.Role, jm.CommandPID = "leader", st.commands[m.PID]
				je.Leader = &jm
			}
			je.Members = append(je.Members, jm)
		}
		if leading && je.Leader == nil { // the leader's status document is missing or stale
			je.Leader = &jsonMember{ID: e.lock.Owner, Role: "leader", Host: e.lock.Host, PID: e.lock.PID}
		}
		out.Elections = append(out.Elections, je)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
