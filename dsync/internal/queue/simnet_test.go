package queue_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// server is the store all owners share: chain documents in a MemStore,
// sessions in a table of their own (their updates are torn), the server's
// clock, and backups.
type server struct {
	s     *sim
	store *memory.Store
	// sessions: each session's documents, expiry by generation; up: the
	// record of up-time of those RenewSessionUp wrote (simoutage_test.go).
	sessions map[string]map[int]time.Time
	up       map[string]map[int]simUp
	// off is the server clock's offset from true time: a failover moves
	// the writes to a member whose clock is within the member skew.
	off time.Duration
	// deleting counts deletes read but not yet applied (torn); inflight
	// counts requests sent and not yet applied.
	deleting, inflight int
	backup             *backup
	// lastReset is the true time of the last reset (0: none).
	lastReset time.Duration
	// dropped is the true time the sessions were last dropped (0: never).
	dropped time.Duration
	// stalled are the requests held back until the next emptying
	// (simstall_test.go).
	stalled []*stalledReq
	// stalledAfter: by ID, the stalled requests that the withdrawal with
	// that ID follows on their link.
	stalledAfter map[string]*stalledReq
}

// backup is a copy of the server's documents.
type backup struct {
	store    memory.State
	sessions map[string]map[int]time.Time
	up       map[string]map[int]simUp
}

func newServer(s *sim) *server {
	return &server{s: s, store: memory.New(), sessions: make(map[string]map[int]time.Time), up: make(map[string]map[int]simUp),
		stalledAfter: make(map[string]*stalledReq)}
}

// now is the server's clock.
func (sv *server) now() time.Time { return sv.s.t0.Add(sv.s.now + sv.off) }

func (sv *server) snapshot() {
	b := &backup{store: sv.store.Snapshot(), sessions: make(map[string]map[int]time.Time, len(sv.sessions)), up: cloneUp(sv.up)}
	for id, gens := range sv.sessions {
		b.sessions[id] = maps.Clone(gens)
	}
	sv.backup = b
}

// liveClaims reports whether some claim has not ended and its session has
// not expired in the server's time (nor, for a claim with an outage grace,
// been proven dead by the record of up-time: recordDead). A claim whose session documents went
// with the sessions collection less than a TTL ago counts as live: its
// owner may not have noticed yet (walkers wait a TTL too), and a walk of
// it may have just found it holding.
func (sv *server) liveClaims() bool {
	now, live := sv.now(), false
	sv.store.Unended(func(d queue.Doc) bool {
		s, found := memory.LatestGen(d.Session, sv.sessions[d.Session])
		// Expired without its first generation: back after a drop (queue's
		// judgedByExpiry), and as good as missing.
		missing := !found || !s.HasFirst && s.ExpiresAt.Before(now)
		live = !missing && !s.ExpiresAt.Before(now) || d.Exp.After(now) ||
			missing && sv.dropped > 0 && sv.s.now-sv.dropped < simTTL ||
			!missing && !sv.recordDead(d, s.ExpiresAt)
		return !live
	})
	return live
}

// net is the network between the owners and the server: every call is
// one request, made by the actor its context carries.
type net struct{ s *sim }

var _ queue.Store = net{}

// The engine asks its Times for the time, and a Client prepares and
// closes the store and lists its keys: the simulation does neither. Of
// the roles, the network serves runs (simrun_test.go), the sweeper's
// calls, and the record of up-time (simoutage_test.go), which only the
// engines of an outage seed, which have a grace, use.

func (net) Prepare(context.Context) error { return nil }
func (net) ServerTime() queue.Interval    { panic("sim: the engine reads time from its Times") }
func (net) Close() error                  { return nil }
func (n net) Roles() driver.Roles         { return driver.Roles{Runs: n, Maintenance: n, Uptime: n} }

type actorKey struct{}

// Branch runs each of an engine's requests made side by side (the queue's
// brancher) as an actor of its own, of the same owner and drawing delays
// as the caller's does: an actor makes one request at a time, and waits
// for its reply alone. The caller's actor is parked until every branch
// has ended (or the owner crashed: a branch's actor ends there too).
func (n net) Branch(ctx context.Context, branches []func(context.Context)) {
	s, a := n.s, ctx.Value(actorKey{}).(*actor)
	left := len(branches)
	if left == 0 {
		return
	}
	if left > 1 {
		s.stats.branched++
	}
	for _, br := range branches {
		b := &actor{s: s, o: a.o, resume: make(chan struct{}), rng: a.rng}
		s.spawnActor(b, func(b *actor) {
			defer func() {
				if left--; left == 0 {
					s.at(s.now, func() { s.step(a) })
				}
			}()
			br(b.ctx())
		})
	}
	a.block()
}

func (a *actor) ctx() context.Context { return context.WithValue(context.Background(), actorKey{}, a) }

var (
	errSimTimeout = errors.New("sim: no reply in time")
	errSimReset   = errors.New("sim: connection reset, request on its way")
	bg            = context.Background()
)

// delay is one leg of a request's trip: usually short, sometimes slow but
// within the caller's patience, rarely far longer (a late delivery).
func (s *sim) delay() time.Duration {
	switch p := s.rng.Float64(); {
	case p < s.lateP:
		return simTimeout + time.Duration(s.rng.Int64N(int64(3*simTTL)))
	case p < s.lateP+0.02:
		return 100*time.Millisecond + time.Duration(s.rng.Int64N(int64(120*time.Millisecond)))
	default:
		return 100*time.Microsecond + time.Duration(s.rng.Int64N(int64(3*time.Millisecond)))
	}
}

// delay is sim.delay drawn from the actor's own generator (actor.rng).
func (a *actor) delay() time.Duration {
	switch p := a.rng.Float64(); {
	case p < a.s.lateP:
		return simTimeout + time.Duration(a.rng.Int64N(int64(3*simTTL)))
	case p < a.s.lateP+0.02:
		return 100*time.Millisecond + time.Duration(a.rng.Int64N(int64(120*time.Millisecond)))
	default:
		return 100*time.Microsecond + time.Duration(a.rng.Int64N(int64(3*time.Millisecond)))
	}
}

func (n net) call(ctx context.Context, op func()) error {
	return n.callTorn(ctx, func() func() { op(); return nil })
}

// callTorn sends a request whose read happens when it arrives and whose
// write, if read returns one, a delay later; the reply follows the write.
func (n net) callTorn(ctx context.Context, read func() (write func())) error {
	return n.callLagged(ctx, 0, read)
}

// callLagged is callTorn whose request reaches the store after lag (0: a
// delay drawn as for any request).
func (n net) callLagged(ctx context.Context, lag time.Duration, read func() (write func())) error {
	s, a := n.s, ctx.Value(actorKey{}).(*actor)
	delay, inflight := s.delay, &s.server.inflight
	if a.rng != nil {
		var uncounted int
		delay, inflight = a.delay, &uncounted
	}
	if lag <= 0 {
		lag = delay()
	}
	var woken, timedOut bool
	sent := s.now
	reply := func() {
		s.tracef("  applied for %s (sent %v)", a.o.name, sent)
		from := s.now
		s.at(s.now+delay(), func() {
			if !woken && !s.outage.replyLost(from, s.now) {
				woken = true
				s.step(a)
			}
		})
	}
	*inflight++
	// A store-wide outage (simoutage_test.go; none on most seeds) drops
	// the requests that arrive while it lasts, or holds them until it
	// ends, and holds back the writes of torn updates.
	s.at(s.now+lag, func() {
		s.outage.arrive(s, func() {
			if timedOut {
				s.stats.late++
			}
			write := read()
			if write == nil {
				*inflight--
				reply()
				return
			}
			s.at(s.now+delay(), func() {
				s.outage.apply(s, func() {
					*inflight--
					write()
					reply()
				})
			})
		}, func() { *inflight-- })
	})
	s.at(s.now+simTimeout, func() {
		if !woken {
			woken, timedOut = true, true
			s.step(a)
		}
	})
	a.block()
	if timedOut {
		return errSimTimeout
	}
	return nil
}

// tornDelete is a delete that reads the IDs to delete when it arrives and
// deletes them by ID a delay later, as FerretDB does.
func (n net) tornDelete(ctx context.Context, read func() []string, del func(ids []string)) error {
	sv := n.s.server
	return n.callTorn(ctx, func() func() {
		ids := read()
		if len(ids) == 0 {
			return nil
		}
		sv.deleting++
		return func() {
			sv.deleting--
			n.s.stats.tornDeletes++
			del(ids)
		}
	})
}

func (n net) Insert(ctx context.Context, d queue.Doc) (err error) {
	if h := n.s.stuck.held[d.ID]; h != nil && d.Kind == queue.KindRelease {
		return n.s.stuck.insert(ctx, n.s, h, d)
	}
	if h := n.s.server.stalledAfter[d.ID]; h != nil && d.Kind == queue.KindWithdraw {
		return n.callAfterStalled(ctx, h, func() {
			err := n.s.server.store.Insert(bg, d)
			n.s.tracef("insert after stalled %v -> %v", d, err)
		})
	}
	if d.Kind == queue.KindGate && n.s.stallNext() {
		return n.callStalled(ctx, "", func() {
			err := n.s.server.store.Insert(bg, d)
			n.s.noteStalledGates([]queue.Doc{d})
			n.s.tracef("stalled insert %v -> %v", d, err)
		})
	}
	var lag time.Duration
	if d.Kind == queue.KindGate && ctx.Value(actorKey{}).(*actor).o == n.s.slowGates && n.s.grng.Float64() < 0.8 {
		// The slow link of one owner: its refreshes' gates land late,
		// while its renewals go through (simworld_test.go).
		lag = simTimeout + time.Duration(n.s.grng.Int64N(int64(2*simSpan)))
		n.s.stats.slowGates++
	}
	sent := n.s.now // true time
	if cerr := n.callLagged(ctx, lag, func() func() {
		switch d.Kind {
		case queue.KindDead:
			n.s.stats.dead++
		case queue.KindWithdraw:
			n.s.stats.withdrawn++
		}
		err = n.s.server.store.Insert(bg, d)
		if err == nil && d.Kind == queue.KindDead {
			n.s.outage.dead(n.s, d, sent)
		}
		n.s.tracef("insert %v -> %v", d, err)
		return nil
	}); cerr != nil {
		return cerr
	}
	return err
}

func (n net) InsertOrdered(ctx context.Context, docs []queue.Doc) (dup int, err error) {
	if len(docs) > 1 && docs[0].Kind == queue.KindGate && n.s.stallNext() {
		var follow string
		for _, d := range docs {
			if d.Kind == queue.KindClaim {
				follow = queue.EndID(d.Key, d.Epoch, d.Nonce)
			}
		}
		return 0, n.callStalled(ctx, follow, func() {
			dup, err := n.s.server.store.InsertOrdered(bg, docs)
			if dup == -1 {
				n.s.noteStalledGates(docs)
			}
			n.s.tracef("stalled insertordered %v -> dup %d %v", docs, dup, err)
		})
	}
	if cerr := n.call(ctx, func() {
		dup, err = n.s.server.store.InsertOrdered(bg, docs)
		if len(docs) > 0 && docs[0].Kind == queue.KindGate {
			switch {
			case dup == -1:
				n.s.stats.starts++
				n.s.twice.started(n.s, docs[0])
			case dup > 0 && docs[dup].Kind == queue.KindGate:
				n.s.stats.orphans++
			}
		}
		n.s.tracef("insertordered %v -> dup %d %v", docs, dup, err)
	}); cerr != nil {
		return 0, cerr
	}
	return dup, err
}

// InsertEach sends each document as an insert of its own: each lands,
// fails or comes late apart from the others, which covers every way a
// real unordered insert's documents can.
func (n net) InsertEach(ctx context.Context, docs []queue.Doc) []error {
	errs := make([]error, len(docs))
	for i, d := range docs {
		errs[i] = n.Insert(ctx, d)
	}
	return errs
}

func (n net) Get(ctx context.Context, id string) (d queue.Doc, found bool, err error) {
	if cerr := n.call(ctx, func() {
		d, found, err = n.s.server.store.Get(bg, id)
		n.s.tracef("get %s -> %v %v %v", id, d, found, err)
	}); cerr != nil {
		return queue.Doc{}, false, cerr
	}
	return d, found, err
}

// Delete is torn as FerretDB's is: each statement reads the document by
// ID when the request arrives, and deletes it by ID a delay later (a late
// request's, long after).
func (n net) Delete(ctx context.Context, ids []string) error {
	store := n.s.server.store
	return n.tornDelete(ctx, func() []string {
		var found []string
		for _, id := range ids {
			if _, ok, _ := store.Get(bg, id); ok {
				found = append(found, id)
			}
		}
		if len(found) > 0 {
			n.s.stats.prunes++
		}
		n.s.tracef("delete %v -> %v", ids, found)
		return found
	}, func(ids []string) {
		for _, id := range ids {
			store.DeleteNow(id)
		}
	})
}

func (n net) RecentKeys(ctx context.Context, from int64) (keys []string, err error) {
	if cerr := n.call(ctx, func() {
		keys, err = n.s.server.store.Roles().Maintenance.RecentKeys(bg, from)
		n.s.tracef("recentkeys from %d -> %v", from, keys)
	}); cerr != nil {
		return nil, cerr
	}
	return keys, err
}

// Compact is torn as a prune is: FerretDB reads what to delete, then
// deletes it by ID. Done records past their expiry are the exception:
// their ID comes back when a Do after the expiry inserts the record
// again, so the driver deletes them with a filter that the server applies
// when the delete lands (dsync/mongo: compact.go), which the write here
// checks again (unless simBugCompactDoneByID).
func (n net) Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error) {
	store := n.s.server.store
	var count int64
	err := n.tornDelete(ctx, func() []string {
		ids := store.CompactSet(sentBefore, keep)
		if n.s.sbug == simBugCompactForgetsDone {
			ids = append(ids, n.s.doneRecordsBefore(sentBefore, keep)...)
		}
		count = int64(len(ids))
		if len(ids) > 0 {
			n.s.stats.compactions++
		}
		for _, id := range ids {
			if key, _, ok := strings.Cut(id, "@"); ok {
				n.s.compacted[key] = true
			}
		}
		n.s.tracef("compact before %v keep %v -> %v", sentBefore, keep, ids)
		return ids
	}, func(ids []string) {
		for _, id := range ids {
			if n.s.sbug != simBugCompactDoneByID && n.s.sbug != simBugCompactForgetsDone {
				if d, found, _ := store.Get(bg, id); found && d.Kind == queue.KindDone &&
					(d.Exp.IsZero() || !d.Exp.Before(sentBefore) || !d.Sent.Before(sentBefore)) {
					n.s.stats.doneSpared++
					continue // a record inserted again since the read
				}
			}
			if d, found, _ := store.Get(bg, id); found && d.Kind == queue.KindDone {
				n.s.stats.doneForgotten++
			}
			store.DeleteNow(id)
		}
	})
	return count, err
}

func (n net) DropGates(ctx context.Context, below int64, sentBefore time.Time) (err error) {
	if cerr := n.call(ctx, func() {
		err = n.s.server.store.Roles().Maintenance.DropGates(bg, below, sentBefore)
		n.s.tracef("dropgates below %d -> %v", below, err)
	}); cerr != nil {
		return cerr
	}
	return err
}

// Sessions live in the simulation's own table rather than the MemStore,
// because their updates are torn the way FerretDB's are: an update reads
// the document when it arrives and writes it whole a delay later (the
// write of a late request, long after), so two updates of one document
// applied at once can lose the higher expiry.

func (n net) InsertSession(ctx context.Context, sess queue.Session) (err error) {
	return n.insertSession(ctx, sess, false)
}

// insertSession inserts sess's document, marked as written through the
// record of up-time (InsertSessionUp) if marked, as the same one write.
func (n net) insertSession(ctx context.Context, sess queue.Session, marked bool) (err error) {
	apply := func() (err error) {
		sv := n.s.server
		gens := sv.sessions[sess.ID]
		if gens == nil {
			gens = make(map[int]time.Time)
			sv.sessions[sess.ID] = gens
		}
		if _, ok := gens[sess.Gen]; ok {
			err = queue.ErrExists
		} else {
			gens[sess.Gen] = sess.ExpiresAt
			delete(sv.up[sess.ID], sess.Gen)
			if marked {
				if sv.up[sess.ID] == nil {
					sv.up[sess.ID] = make(map[int]simUp)
				}
				sv.up[sess.ID][sess.Gen] = simUp{}
			}
		}
		n.s.tracef("insertsession %s gen %d %v marked %v -> %v", sess.ID, sess.Gen, sess.ExpiresAt.Sub(n.s.t0), marked, err)
		return err
	}
	if a := ctx.Value(actorKey{}).(*actor); n.s.holdSession(a.o, sess, func() { _ = apply() }) {
		// The connection fails at once, the request still on its way: the
		// heldSession fault lands it later.
		a.sleep(time.Millisecond)
		return errSimReset
	}
	if cerr := n.call(ctx, func() { err = apply() }); cerr != nil {
		return cerr
	}
	return err
}

func (n net) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (found bool, err error) {
	sv := n.s.server
	if cerr := n.callTorn(ctx, func() func() {
		old, ok := sv.sessions[id][gen]
		found = ok
		return func() {
			if _, still := sv.sessions[id][gen]; ok && still {
				n.writeTornMax(id, gen, old, expires)
			}
			n.s.tracef("renewsession %s gen %d %v -> %v", id, gen, expires.Sub(n.s.t0), ok)
		}
	}); cerr != nil {
		return false, cerr
	}
	return found, nil
}

// writeTornMax writes the later of read (the document's expiry as read
// when the request arrived) and expires to session document id's gen:
// $max applied as a read and a later write, as FerretDB does, so a write
// that lowers a value set in between counts as torn.
func (n net) writeTornMax(id string, gen int, read, expires time.Time) {
	sv := n.s.server
	if read.Before(expires) {
		read = expires
	}
	if cur := sv.sessions[id][gen]; read.Before(cur) {
		n.s.stats.torn++
	}
	sv.sessions[id][gen] = read
}

func (n net) GetSession(ctx context.Context, id string) (sess queue.Session, found bool, err error) {
	if cerr := n.call(ctx, func() {
		sess, found = memory.LatestGen(id, n.s.server.sessions[id])
		n.s.tracef("getsession %s -> %v %v", id, sess.ExpiresAt.Sub(n.s.t0), found)
	}); cerr != nil {
		return queue.Session{}, false, cerr
	}
	return sess, found, err
}

// cleanSessions deletes the session documents that expired before
// before, as a backend does when it opens a session; the delete is torn.
func (n net) cleanSessions(ctx context.Context, before time.Time) error {
	type genID struct {
		id  string
		gen int
	}
	sv := n.s.server
	var found []genID
	return n.tornDelete(ctx, func() []string {
		found = found[:0]
		for id, gens := range sv.sessions {
			for gen, exp := range gens {
				if exp.Before(before) {
					found = append(found, genID{id, gen})
				}
			}
		}
		if len(found) == 0 {
			return nil
		}
		return []string{"sessions"}
	}, func([]string) {
		for _, g := range found {
			if _, ok := sv.sessions[g.id][g.gen]; ok {
				delete(sv.sessions[g.id], g.gen)
				delete(sv.up[g.id], g.gen)
				n.s.stats.cleaned++
			}
			if len(sv.sessions[g.id]) == 0 {
				delete(sv.sessions, g.id)
			}
		}
	})
}
