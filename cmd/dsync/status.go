//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/statuspage"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// dsync status: the command, its flags and exit statuses. What it reads
// is in status_read.go (through a statuspage.Reader), how it prints it in
// status_table.go, status_json.go, status_revoked.go, status_stalls.go,
// status_drained.go and, for the shards of partitions, status_shards.go.

const statusUsage = `Usage: dsync status [NAME] [flags]
       dsync status --web [--addr HOST:PORT]

Lists the locks and the elections, with the elections' members, judged in
the server's time, as they are read (a long list streams), under a line
that names the database and lock collection read and the server. When
nothing is found there, status names the server's other databases that
have a collection of that name (if the user may list databases), and
how to read one:

  NAME       the name the lock was made with: 'dsync lock -n 3 encode'
             and 'dsync once migrate-42' are listed as encode and
             migrate-42 (see KIND)
  KIND       mutex (dsync lock, dsync.Mutex), rwmutex (dsync.RWMutex),
             semaphore (dsync lock -n N, dsync.Semaphore), once (dsync
             once, dsync.Once); the elections follow in a table of their
             own. A Mutex made with dsync.WithNamespace is a mutex listed
             by its key as stored, dsync:NS/NAME
  STATE      held (a live claim heads the lock's queue); read (readers of
             an RWMutex hold it, one line each); U/N (a Semaphore of N
             units, U of them held, one line per holder); done (a Once
             whose command or function ran to success); free (no claim
             holds or waits: every one was released, withdrawn, or ended
             with its holder's session)
  TOKEN      the fencing token of the holder (an election's TERM); "-"
             when free
  HOST, PID  the process holding the lock or leading: dsync lock or dsync
             elect, or a program using the library; "-" when nobody holds
  CMD PID    the command that dsync runs under the lock, for holders on
             this machine (found among the holder's child processes)
  HELD FOR   since the holder queued for the lock: for a holder that
             waited behind others, its wait is counted too
  EXPIRES IN when the holder's session expires unless renewed; "expired"
             once it has, while nothing proves the holder gone: within
             its outage grace (--outage-grace), it rides an outage of the
             store, or died with no other process renewing to show it
  WAITING    live claims queued behind the holders: Lock calls waiting
  LAST SEEN  a candidate's last heartbeat

A lock or an election is listed from its first use by this release of
dsync (or a later one) on, held or not; one last used by an older release
is listed once it is used again. A name claimed a moment ago may not be
listed yet: the name is recorded in the background, so that a claim never
waits for it (with NAME, a lock held or waited for is shown at once).
Reading who holds a lock records, as any waiter would, that a claim whose
session expired has ended.

The order is the server's: on MongoDB, the order of the names' bytes as
stored (each kind but the mutex stores its names under a prefix of its
own: dsync:rw/, dsync:sem/, dsync:once/, dsync:election/); on FerretDB
(dsync server), the order in which the names were first used, which
stays as it is as others are added (FerretDB would read every name to
sort them). The locks are shown as they come; the elections in a table
after them.

The shards of a partition (dsync partition, leader.Partition), each
the election NAME#I, are shown in a table of their own after the
elections: PARTITION, SHARD, its owner's TOKEN, HOST and PID (from the
shard's lease), and when that lease EXPIRES IN; "no owner" while nobody
holds the shard. Any election named like one, "x#3", is shown as a shard.

Last, whatever NAME or --prefix select: the sessions operators revoked
(dsync revoke) under "revoked sessions:", and the holds that stalled
(their work reported no progress within their progress deadline) under
"stalled holds:", newest first: the lock's name and kind, the stalled
claim's token, its holder's host and pid, when it stalled, last
reported progress and began holding (server time; "?" where the holder
did not say), marked "(last hour)" when it stalled in the last hour.
Under "outages ridden through (last day):", newest first, each process
that held through an outage of the store (its outage grace,
--outage-grace): when its lease was suspended (server time: its holds'
deadline; the outage began up to a TTL earlier), for how long, how many
holds it kept, its host, pid and session.
Under "lock sets waiting:", each lock set's claim that waits among the
names listed: the set, its host and pid, what it holds (from its wait
note, once it waited its deadlock timeout), where it waits and for whom
(holders' sets, hosts, pids, tokens); under "deadlocks broken (last
day):", when, the victim and the cycle. Then, for the partitions shown, the members an operator drained (dsync
drain) under "drained partition members:": the partition, the member's
ID, its host and pid, and who drained it when and why (one read per
partition).

The columns are as wide as their cells (in terminal columns: a Chinese
character takes two). The locks are printed a page at a time (100 lines,
or fewer when the next line came more than a second after the page's
first): a page with a wider cell widens its column from there on.
Names longer than 40 columns are cut short in the table; --json shows
them whole. With NAME (after '--' if it starts with '-'), everything
named NAME: the mutex, rwmutex, semaphore, once and election of that
name, those that exist, and the shards of partition NAME as listed.

Flags:
  --prefix P list only the names whose key as stored begins with P: a
             mutex's key is its name; the other kinds' keys begin with
             their prefix above (--prefix dsync:election/ lists the
             elections, --prefix dsync:sem/enc the semaphores named enc...)
  --limit N  list at most N names, and say how to list the next ones
  --after K  list the names after the key K in the order above: with
             --limit N, the next page (the key the previous page ended
             with). MongoDB only: FerretDB cannot resume after a name
             without reading every name before it, so there list without
             --after (the list streams), or narrow it with --prefix
  --seen D   list the election members whose last heartbeat is at most D
             old (default %v: three heartbeats of a candidate with the
             default --ttl; dsync elect heartbeats at least every %v)
  --json     print one JSON object per line, as they are read, in the
             schema of the status page's status.json (package
             statuspage; docs/observability.md shows it): {"lock": ...}
             per lock and {"election": ...} per election, each with its
             "name", its "kind" or lease "key", its holders and waiters
             or its leader and members; then {"partition": ...} per
             partition whose shards were listed (its shards are not
             elections here), {"revocation": ...} per revoked session,
             {"stall": ...} per stall record, {"setWait": ...} and
             {"deadlock": ...} per lock set's wait and deadlock broken,
             {"outage": ...} per outage ridden through (a record per
             session that kept holds), and last {"summary": ...}: the server's time ("now"), the
             order, with --limit whether more follow and the --after
             that lists them ("more", "next"), the "database" and
             "collection" read and, when nothing was found, the other
             databases that have the collection ("elsewhere")
  --web      serve a live page of the same (it updates every second, is
             filtered by namespace and prefix in the page, and serves the
             same data as JSON at status.json) until interrupted
  --addr A   where --web listens (default %s: this machine only;
             0.0.0.0:PORT shows it to the network, to anyone who can reach
             the port)
  (and the global flags; see 'dsync -h': --timeout bounds each wait for
  the server, not the whole list)

Exit status: 0; 1 if the server cannot be read or nothing is named NAME;
2: usage error (--after on FerretDB too).
`

// defaultSeen is how recent a member's heartbeat must be for status to
// list it: three heartbeats of a candidate with the default TTL, which is
// how long leader.Election.Members counts one live.
const defaultSeen = dsync.DefaultTTL

var statusCmd = &command{
	name:    "status",
	summary: "list locks, their holders and the members of elections",
	usage:   statusHelp,
	run:     runStatus,
}

var statusHelp = fmt.Sprintf(statusUsage, defaultSeen, maxHeartbeat, defaultWebAddr)

// statusFlags are dsync status's flags, and what they select.
type statusFlags struct {
	seen   time.Duration
	asJSON bool
	sel    selection
	// web: serve the live page on addr (status_web.go).
	web  bool
	addr string
}

func runStatus(g *globals, args []string) int {
	f, code, ok := parseStatus(g, args)
	if !ok {
		return code
	}
	ctx := context.Background()
	client, db, err := g.connect(ctx)
	if err != nil {
		if isUsage(err) {
			return fail("status", exitUsage, err)
		}
		return fail("status", exitFailure, err)
	}
	defer disconnect(client)
	if f.web {
		return serveStatusPage(g, db, f)
	}
	return printStatus(ctx, g, db, f)
}

// parseStatus parses dsync status's command line. When it fails, it has
// said why and code is the exit status.
func parseStatus(g *globals, args []string) (f statusFlags, code int, ok bool) {
	fs := newFlagSet("status", g)
	fs.DurationVar(&f.seen, "seen", defaultSeen, "")
	fs.BoolVar(&f.asJSON, "json", false, "")
	fs.StringVar(&f.sel.prefix, "prefix", "", "")
	fs.StringVar(&f.sel.after, "after", "", "")
	fs.IntVar(&f.sel.limit, "limit", 0, "")
	fs.BoolVar(&f.web, "web", false, "")
	fs.StringVar(&f.addr, "addr", defaultWebAddr, "")
	pos, _, code, err := parseArgs(fs, statusHelp, args, false)
	if err != nil {
		return f, code, false
	}
	if err := f.check(pos); err != nil {
		return f, usageError("status", err), false
	}
	return f, 0, true
}

// check refuses flags that do not go together, and takes the NAME among
// pos, the positional arguments, if there is one.
func (f *statusFlags) check(pos []string) error {
	switch {
	case len(pos) > 1:
		return fmt.Errorf("unexpected argument %q", pos[1])
	case f.seen <= 0:
		return fmt.Errorf("--seen must be positive, got %v", f.seen)
	case f.sel.limit < 0:
		return fmt.Errorf("--limit must not be negative, got %d", f.sel.limit)
	case f.web && (len(pos) > 0 || f.asJSON || f.sel.ranged()):
		return errors.New("--web serves the page, which selects what it shows: no NAME, --json, --prefix, --after or --limit with it")
	case !f.web && f.addr != defaultWebAddr:
		return errors.New("--addr is where --web serves the page: give --web too")
	case len(pos) == 1 && f.sel.ranged():
		return errors.New("NAME selects what is named NAME: no --prefix, --after or --limit with it")
	case len(pos) == 1:
		f.sel.name = pos[0]
		return checkName(f.sel.name, maxLockName)
	}
	return nil
}

// printStatus reads what f selects in db and prints it as it is read.
func printStatus(ctx context.Context, g *globals, db *mongo.Database, f statusFlags) int {
	// --timeout bounds each wait for the server: a long list takes as
	// long as it takes, and a server that stops answering ends it.
	ctx, kick, stop := idleTimeout(ctx, g.timeout)
	defer stop()
	if !f.asJSON {
		fmt.Fprintln(os.Stdout, g.whereLine())
	}
	store, err := openStatus(ctx, g, db, f.seen)
	if err != nil {
		return fail("status", exitFailure, err)
	}
	defer store.close()
	// The revocations first, so that --json marks the revoked sessions'
	// claims as it prints them.
	recs, err := store.records(ctx)
	if err != nil {
		return fail("status", exitFailure, err)
	}
	var out statusSink
	if f.asJSON {
		out = newJSONSink(os.Stdout, recs.revocations, recs.stalls, &recs.sets, recs.outages, func(partition string) ([]statuspage.DrainedMember, error) {
			return store.reader.Drained(ctx, partition)
		})
	} else {
		out = &setWaitSink{statusSink: newTableSink(os.Stdout, "", fmt.Sprintf("%s.%s", g.db, g.collection), f.sel), sets: &recs.sets}
	}
	sum, err := store.read(ctx, f.sel, sinkKicking{out, kick})
	sum.database, sum.collection = g.db, g.collection
	if err == nil && sum.Locks == 0 && sum.Elections == 0 && f.sel.prefix == "" && f.sel.after == "" {
		// Nothing here: say which other databases have dsync's locks.
		sum.elsewhere = elsewhere(ctx, db.Client(), g.db, g.collection)
		sum.hint = g.elsewhereHint(sum.elsewhere)
	}
	if code, err := readFailed(g, f.sel, sum, err); err != nil {
		return fail("status", code, err)
	}
	if err := out.done(sum); err != nil {
		return fail("status", exitFailure, err)
	}
	if f.asJSON {
		return exitOK
	}
	if err := printTail(ctx, store, out, recs, sum.now); err != nil {
		return fail("status", exitFailure, err)
	}
	return exitOK
}

// readFailed is what status says when the read of sel failed (err), or
// found nothing where a NAME was given: the error and the exit status;
// a nil error if neither.
func readFailed(g *globals, sel selection, sum statusSummary, err error) (int, error) {
	switch {
	case errors.Is(err, statuspage.ErrAfterUnsupported):
		return exitUsage, fmt.Errorf("--after: the server is FerretDB, which lists names in the order of their first use, and cannot resume after a name without reading every name before it: list without --after (the list streams), or narrow it with --prefix")
	case err != nil:
		return exitFailure, err
	case sel.name != "" && sum.Locks == 0 && sum.Elections == 0:
		err := fmt.Errorf("nothing named %q in %s.%s (no mutex, rwmutex, semaphore, once, election or partition)", sel.name, g.db, g.collection)
		if sum.hint != "" {
			err = fmt.Errorf("%w; %s", err, sum.hint)
		}
		return exitFailure, err
	}
	return exitOK, nil
}

// printTail prints, after the table, the revocations, the stalls, the
// outages ridden through, the lock sets' waits and deadlocks, and the
// partitions' drained members.
func printTail(ctx context.Context, store *statusStore, out statusSink, recs statusRecords, now time.Time) error {
	if err := printRevocations(os.Stdout, recs.revocations); err != nil {
		return err
	}
	if err := printStalls(os.Stdout, recs.stalls, now); err != nil {
		return err
	}
	if err := printOutages(os.Stdout, recs.outages); err != nil {
		return err
	}
	w, ok := out.(*setWaitSink)
	if !ok {
		return nil
	}
	if err := printSetWaits(os.Stdout, w.waits, &recs.sets, now); err != nil {
		return err
	}
	if t, ok := w.statusSink.(*tableSink); ok {
		return printDrained(ctx, os.Stdout, store.reader, t.partitionNames())
	}
	return nil
}

// A selection is what status lists: the lock and the election name, or
// the keys that begin with prefix, after after, at most limit of them (0:
// all).
type selection struct {
	name          string
	prefix, after string
	limit         int
}

// ranged reports whether s selects by --prefix, --after or --limit.
func (s selection) ranged() bool { return s.prefix != "" || s.after != "" || s.limit != 0 }

// idleTimeout returns a context that ends, with a cause that names
// --timeout, once d passes without a call of kick; stop releases it.
func idleTimeout(parent context.Context, d time.Duration) (ctx context.Context, kick, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	t := time.AfterFunc(d, func() { cancel(fmt.Errorf("%w: no answer within %v (--timeout)", context.DeadlineExceeded, d)) })
	return ctx, func() { t.Reset(d) }, func() {
		t.Stop()
		cancel(nil)
	}
}

// A statusSink prints what status reads, as it is read.
type statusSink interface {
	statuspage.Sink
	// done prints what follows the last lock and election.
	done(s statusSummary) error
}

// sinkKicking is a sink that tells the idle timeout that the server
// answered, at each lock and election.
type sinkKicking struct {
	statusSink
	kick func()
}

func (s sinkKicking) Lock(l statuspage.LockState) error {
	s.kick()
	return s.statusSink.Lock(l)
}

func (s sinkKicking) Election(e statuspage.ElectionState) error {
	s.kick()
	return s.statusSink.Election(e)
}

// A statusSummary is what status says after the locks and elections:
// what the read found (statuspage.Listed), and when.
type statusSummary struct {
	now    time.Time     // server time at the end
	within time.Duration // uncertainty of the server times
	sel    selection     // what was read
	statuspage.Listed
	// database and collection are where status read; when it found
	// nothing, elsewhere are the other databases that have such a
	// collection, and hint says how to read one.
	database, collection string
	elsewhere            []string
	hint                 string
}
