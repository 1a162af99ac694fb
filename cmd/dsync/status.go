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
	"slices"
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
	"github.com/go-dsync/dsync/internal/chain"
	"github.com/go-dsync/dsync/leader"
)

const statusUsage = `Usage: dsync status [NAME] [flags]

Lists the locks in the lock collection and the elections in the election
collection with their members, judged in the server's time:

  STATE      held (a live claim heads the lock's queue); free (every
             claim ended); expired (free, and the last holder's session
             expired: it crashed, or was cut off from the server)
  TOKEN      the fencing token of the holder, or of the last hold (an
             election's TERM)
  HOST, PID  the process holding the lock or leading: dsync lock or dsync
             elect, or a program using the library; "-" when nobody holds
  CMD PID    the command that dsync runs under the lock, for holders on
             this machine (found among the holder's child processes)
  HELD FOR   since the holder's turn came (its queuing, or the end of the
             claim before it)
  EXPIRES IN when the holder's session expires unless renewed
  WAITING    live claims queued behind the holder: Lock calls waiting
  LAST SEEN  a candidate's last heartbeat

Reading who holds a lock records, as any waiter would, that a claim
whose session expired has ended.

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

// lockDoc is a document of dsyncmongo's lock collection (protocol v2, see
// internal/chain): a claim of a key's epoch, the end marker of one
// (release, withdraw, dead), or a key's floor. status reads the
// collection itself to list the keys, which dsyncmongo has no call for;
// who holds a key it asks dsyncmongo (Backend.Current).
type lockDoc struct {
	ID      string    `bson:"_id"`
	Key     string    `bson:"key"`
	Epoch   int64     `bson:"epoch"`
	Kind    string    `bson:"kind"`
	Nonce   string    `bson:"nonce"`
	Session string    `bson:"session"`
	Owner   string    `bson:"owner"`
	Host    string    `bson:"host"`
	PID     int       `bson:"pid"`
	At      time.Time `bson:"at"` // a claim: when it queued; a marker: when it was sent
}

// sessionDoc is a document of dsyncmongo's sessions collection.
type sessionDoc struct {
	ID        string    `bson:"_id"`
	ExpiresAt time.Time `bson:"expiresAt"`
}

// sessionsSuffix names dsyncmongo's sessions collection after the lock
// collection (dsyncmongo's sessionsSuffix).
const sessionsSuffix = "_sessions"

// A lockState is what status shows of one key.
type lockState struct {
	key string
	// state: held (a live claim heads the queue); free (every claim
	// ended); expired (free, and the last hold ended because its
	// holder's session expired: it crashed or was cut off).
	state string
	// token: the holder's, or the last hold's (0 if no claim ever held,
	// as far as the documents left show).
	token int64
	// holder is the head of the queue when held; otherwise the last
	// holder, if known.
	holder *holderInfo
	// waiting counts the live claims queued behind the holder.
	waiting int
}

type holderInfo struct {
	owner, host string
	pid         int
	// since: when it began to hold, as far as the documents tell: the
	// later of its claim's queuing and the last end below it.
	since     time.Time
	expiresAt time.Time // its session's expiry (server time)
}

// A status is what `dsync status` shows.
type status struct {
	now       time.Time     // server time when read
	within    time.Duration // uncertainty of now
	locks     []lockState   // plain locks, by key
	elections []election

	// commands are the pids of the commands that holders on this host
	// run, by holder pid (see findCommands).
	commands map[int]int
}

type election struct {
	name    string
	lock    lockState // of leader.LockKey(name)
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
	lockKeys, err := readKeyDocs(ctx, g, db, g.collection, name)
	if err != nil {
		return nil, err
	}
	leaseName := ""
	if name != "" {
		leaseName = leader.LockKey(name)
	}
	leaseKeys, err := readKeyDocs(ctx, g, db, g.elections, leaseName)
	if err != nil {
		return nil, err
	}
	if len(lockKeys) == 0 && len(leaseKeys) == 0 {
		st.now = serverNow()
		return st, nil
	}

	// Status reports what it reads; the backends' own warnings would only
	// interleave with the table.
	quiet := dsyncmongo.WithLogger(slog.New(slog.DiscardHandler))
	locks, err := dsyncmongo.New(db, append(g.lockOptions(), quiet)...)
	if err != nil {
		return nil, err
	}
	defer locks.Close()
	elections, err := g.leaderBackend(db, quiet)
	if err != nil {
		return nil, err
	}
	defer elections.Close()
	st.now = serverNow()
	liveAfter := st.now.Add(-st.within)
	if err := readHeads(ctx, g, db, g.collection, locks, lockKeys, liveAfter); err != nil {
		return nil, err
	}
	if err := readHeads(ctx, g, db, g.elections, elections.Backend, leaseKeys, liveAfter); err != nil {
		return nil, err
	}
	for _, k := range lockKeys {
		st.locks = append(st.locks, k.state)
	}
	for _, k := range leaseKeys {
		// A key without the prefix is no election's lease: a lock someone
		// took on an election backend. It is not listed.
		if e, ok := strings.CutPrefix(k.key, leader.LockKey("")); ok {
			st.elections = append(st.elections, election{name: e, lock: k.state})
		}
	}
	for i := range st.elections {
		e := &st.elections[i]
		if e.members, err = elections.Members(ctx, e.name, seen); err != nil {
			return nil, err
		}
	}
	st.now = serverNow()
	return st, nil
}

// readKeyDocs reads the claims and end markers of collection coll (of key
// only, unless it is empty), grouped by key. Keys left with markers only
// (their claims pruned) are not listed.
func readKeyDocs(ctx context.Context, g *globals, db *mongo.Database, coll, key string) ([]*keyDocs, error) {
	filter := bson.D{{Key: "kind", Value: bson.D{{Key: "$in", Value: bson.A{chain.KindClaim, chain.KindRelease, chain.KindWithdraw, chain.KindDead}}}}}
	if key != "" {
		filter = append(filter, bson.E{Key: "key", Value: key})
	}
	cur, err := db.Collection(coll).Find(ctx, filter,
		options.Find().SetSort(bson.D{{Key: "key", Value: 1}, {Key: "epoch", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", g.db, coll, err)
	}
	var docs []lockDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("reading %s.%s: %w", g.db, coll, err)
	}
	var keys []*keyDocs
	for i := range docs {
		d := &docs[i]
		if len(keys) == 0 || keys[len(keys)-1].key != d.Key {
			keys = append(keys, &keyDocs{key: d.Key, ends: map[string]*lockDoc{}})
		}
		k := keys[len(keys)-1]
		if d.Kind == chain.KindClaim {
			k.claims = append(k.claims, d)
		} else {
			k.ends[d.ID] = d
		}
	}
	return slices.DeleteFunc(keys, func(k *keyDocs) bool { return len(k.claims) == 0 }), nil
}

// keyDocs are the documents of one key, as read.
type keyDocs struct {
	key    string
	claims []*lockDoc          // by epoch
	ends   map[string]*lockDoc // markers, by _id
	state  lockState
}

// end returns the marker of claim c, if read.
func (k *keyDocs) end(c *lockDoc) *lockDoc {
	return k.ends[chain.EndID(c.Key, uint64(c.Epoch), c.Nonce)]
}

// readHeads fills in each key's state: its holder (the head of its queue,
// from dsyncmongo's Current), the live claims behind it, or the last
// hold. A claim counts as waiting if it has no end marker and its session
// had not expired at liveAfter.
func readHeads(ctx context.Context, g *globals, db *mongo.Database, coll string, b *dsyncmongo.Backend, keys []*keyDocs, liveAfter time.Time) error {
	sessions := map[string]*sessionDoc{}
	for _, k := range keys {
		for _, c := range k.claims {
			sessions[c.Session] = nil
		}
	}
	var heads []*dsyncmongo.LockInfo
	for _, k := range keys {
		info, err := b.Current(ctx, k.key)
		switch {
		case errors.Is(err, dsyncmongo.ErrNoLock):
			heads = append(heads, nil)
		case err != nil:
			return err
		default:
			heads = append(heads, &info)
		}
	}
	// Read after Current, which records the dead marker of a claim whose
	// session it found expired.
	if len(sessions) > 0 {
		// A session is its document and, after renewals of unknown
		// outcome, "<session>~<n>" ones: its expiry is their highest.
		var ids, gens bson.A
		for id := range sessions {
			ids = append(ids, id)
			gens = append(gens, bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: id + "~"}, {Key: "$lt", Value: id + "~:"}}}})
		}
		sc := db.Collection(coll + sessionsSuffix)
		cur, err := sc.Find(ctx, bson.D{{Key: "$or", Value: append(gens, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})}})
		if err != nil {
			return fmt.Errorf("reading %s.%s: %w", g.db, sc.Name(), err)
		}
		var docs []sessionDoc
		if err := cur.All(ctx, &docs); err != nil {
			return fmt.Errorf("reading %s.%s: %w", g.db, sc.Name(), err)
		}
		for i := range docs {
			id, _, _ := strings.Cut(docs[i].ID, "~")
			if s := sessions[id]; s == nil || docs[i].ExpiresAt.After(s.ExpiresAt) {
				sessions[id] = &docs[i]
			}
		}
	}
	expiry := func(session string) time.Time {
		if s := sessions[session]; s != nil {
			return s.ExpiresAt
		}
		return time.Time{}
	}
	for i, k := range keys {
		if h := heads[i]; h != nil && h.Live {
			k.state = lockState{key: k.key, state: "held", token: int64(h.Token), holder: &holderInfo{
				owner: h.Owner, host: h.Host, pid: h.PID, since: h.AcquiredAt, expiresAt: h.ExpiresAt}}
			for _, c := range k.claims {
				switch {
				case c.Epoch < int64(h.Token):
					// The holder began to hold after every claim below it ended.
					if e := k.end(c); e != nil && e.At.After(k.state.holder.since) {
						k.state.holder.since = e.At
					}
				case c.Epoch > int64(h.Token) && k.end(c) == nil && !expiry(c.Session).Before(liveAfter):
					k.state.waiting++
				}
			}
			continue
		}
		// Free: the last hold is the newest claim that did not end by a
		// withdrawal (a claim given up before it held).
		k.state = lockState{key: k.key, state: "free"}
		for j := len(k.claims) - 1; j >= 0; j-- {
			c := k.claims[j]
			e := k.end(c)
			if e == nil {
				// Ended since it was read (Current found no live claim):
				// read its marker.
				var d lockDoc
				err := db.Collection(coll).FindOne(ctx, bson.D{{Key: "_id", Value: chain.EndID(c.Key, uint64(c.Epoch), c.Nonce)}}).Decode(&d)
				if errors.Is(err, mongo.ErrNoDocuments) {
					continue // pruned, or its claim was queued after Current
				}
				if err != nil {
					return fmt.Errorf("reading %s.%s: %w", g.db, coll, err)
				}
				e = &d
			}
			if e.Kind == chain.KindWithdraw {
				continue
			}
			if e.Kind == chain.KindDead {
				k.state.state = "expired"
			}
			k.state.token = c.Epoch
			k.state.holder = &holderInfo{owner: c.Owner, host: c.Host, pid: c.PID, since: c.At, expiresAt: expiry(c.Session)}
			break
		}
	}
	return nil
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
	for _, l := range st.locks {
		if l.state == "held" && l.holder.host == host {
			pids = append(pids, l.holder.pid)
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
		t := newTable("LOCK", "STATE", ">TOKEN", "HOST", ">PID", ">CMD PID", ">HELD FOR", ">EXPIRES IN", ">WAITING")
		for _, l := range st.locks {
			host, pid, cmd, heldFor, left, waiting := "-", "-", "-", "-", "-", "-"
			if l.state == "held" {
				h := l.holder
				host, pid, cmd = cell(h.host, maxHostWidth), strconv.Itoa(h.pid), st.commandPID(h.pid)
				heldFor, left = fmtDur(max(st.now.Sub(h.since), 0)), fmtDur(max(h.expiresAt.Sub(st.now), 0))
				waiting = strconv.Itoa(l.waiting)
			}
			t.add(cell(l.key, maxNameWidth), l.state, strconv.FormatInt(l.token, 10), host, pid, cmd, heldFor, left, waiting)
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
			leading := e.lock.state == "held"
			term, left := strconv.FormatInt(e.lock.token, 10), "-"
			if leading {
				left = fmtDur(max(e.lock.holder.expiresAt.Sub(st.now), 0))
			}
			var first []string // the leader's row
			var standby [][]string
			for _, m := range e.members {
				row := []string{name, "standby", "", cell(m.Host, maxHostWidth), strconv.Itoa(m.PID), "-",
					cell(dash(m.Version), maxVersionWidth), fmtDur(max(st.now.Sub(m.LastSeen), 0)) + " ago", ""}
				if leading && m.ID == e.lock.holder.owner {
					row[1], row[2], row[5], row[8] = "leader", term, st.commandPID(m.PID), left
					first = row
				} else {
					standby = append(standby, row)
				}
			}
			switch {
			case first != nil:
			case leading: // the leader's status document is missing or stale
				first = []string{name, "leader", term, cell(e.lock.holder.host, maxHostWidth), strconv.Itoa(e.lock.holder.pid), "-", "-", "-", left}
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
		Token int64  `json:"token"` // the holder's, or the last hold's (0: none known)
		// Holder is who holds it; LastHolder who held it last, when
		// nobody does (and the documents still tell).
		Holder     *jsonHolder `json:"holder"`
		LastHolder *jsonHolder `json:"lastHolder,omitempty"`
		// Waiting counts the live claims queued behind the holder (0
		// when free).
		Waiting int `json:"waiting"`
	}
	jsonHolder struct {
		Host       string `json:"host"`
		PID        int    `json:"pid"`                  // the process holding the lease
		CommandPID int    `json:"commandPid,omitempty"` // the command it runs, when known
		// AcquiredAt is when it began to hold, as far as the documents
		// tell: the later of its queuing and the end of the claim before
		// it. ExpiresAt is when its session expires unless renewed.
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

func (st *status) holder(h *holderInfo) *jsonHolder {
	return &jsonHolder{Host: h.host, PID: h.pid, CommandPID: st.commands[h.pid], AcquiredAt: h.since, ExpiresAt: h.expiresAt,
		HeldForMS: ms(max(st.now.Sub(h.since), 0)), ExpiresInMS: ms(max(h.expiresAt.Sub(st.now), 0))}
}

func (st *status) writeJSON(w io.Writer) error {
	out := jsonStatus{ServerTime: st.now, UncertaintyMS: ms(st.within), Locks: []jsonLock{}, Elections: []jsonElection{}}
	for _, ls := range st.locks {
		l := jsonLock{Name: ls.key, State: ls.state, Token: ls.token, Waiting: ls.waiting}
		switch {
		case l.State == "held":
			l.Holder = st.holder(ls.holder)
		case ls.holder != nil:
			l.LastHolder = st.holder(ls.holder)
			l.LastHolder.CommandPID = 0
		}
		out.Locks = append(out.Locks, l)
	}
	for _, e := range st.elections {
		je := jsonElection{Name: e.name, Term: e.lock.token, Members: []jsonMember{}}
		leading := e.lock.state == "held"
		if leading {
			je.Lease = st.holder(e.lock.holder)
		}
		for _, m := range e.members {
			jm := jsonMember{ID: m.ID, Role: "standby", Host: m.Host, PID: m.PID, Version: m.Version,
				LastSeen: m.LastSeen, AgoMS: ms(max(st.now.Sub(m.LastSeen), 0))}
			if leading && m.ID == e.lock.holder.owner {
				jm.Role, jm.CommandPID = "leader", st.commands[m.PID]
				je.Leader = &jm
			}
			je.Members = append(je.Members, jm)
		}
		if leading && je.Leader == nil { // the leader's status document is missing or stale
			h := e.lock.holder
			je.Leader = &jsonMember{ID: h.owner, Role: "leader", Host: h.host, PID: h.pid}
		}
		out.Elections = append(out.Elections, je)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
