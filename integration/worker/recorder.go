package worker

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/clienthook"
)

type leaseID struct {
	key   string
	token uint64
}

// predSession is what the recorder knows of one session.
type predSession struct {
	deadline int64 // predicted local deadline
	retired  bool  // deadline passed before a renewal was confirmed, or gone
}

// predHold is a claim that holds, in a session.
type predHold struct {
	session string
	nonce   string
	// lostAt, once the hold's session resumed after the hold was lost
	// at its deadline (a suspension), is that deadline: the hold stays
	// lost, its deadline stays there, and no renewal moves it.
	lostAt int64
}

// predClaim is a claim the store confirmed, not yet ended.
type predClaim struct {
	session string
	nonce   string
}

// recorder predicts each hold's local deadline from the send and reply
// times of the store calls (it wraps the backend's store), by the rule
// dsync documents. A hold's
// deadline is its session's: the send time of the session's last open or
// renewal confirmed before the deadline in force, plus the TTL, minus
// TTL/20. The send time is when the engine read the server's time for the
// expiry it sent (see sendTime), not when the store call began. A session whose deadline passes before a renewal is confirmed
// (or that the store reports gone) is retired for good: a later reply
// counts for nothing; with an outage grace, a later renewal may resume it
// (resumes). A renewal is an update of one of the session's
// documents, or the insert of its next one. A hold begins when the worker
// says Lock (or Campaign) returned it, with its session's deadline at
// that moment (none if it has passed); each later renewal of the session
// confirmed in time moves every hold of the session to its send time plus
// TTL − TTL/20; the send of its end marker forgets the claim.
//
// It writes each hold's deadline to the history when the hold begins and
// whenever it moves, before the library sees the reply, so a worker
// killed right after a renewal still leaves it on record. Its send times
// are read after the library's (for a renewal that took two calls, at
// the first: see firstSent), so its deadlines are never earlier than
// the library's (by microseconds); the checker flags a library deadline
// later than the prediction: that would be a late reply counted. And they
// are read before a server-time read that the stored expiry is a TTL past
// (sendTime), so no other process may take over before the prediction
// plus TTL/20: the suite checks a killed holder's takeover against it.
type recorder struct {
	w           *worker
	ttl, margin int64
	// grace is the Clients' outage grace (setGrace: Config.Grace, or the
	// library's default): with one, a session whose deadline passes is
	// suspended, not retired (see renewedLocked). Guarded by mu.
	grace int64
	now   func() int64 // history.Now; a test's clock

	mu       sync.Mutex
	sessions map[string]*predSession
	claims   map[leaseID]predClaim
	holds    map[leaseID]*predHold
	// dones: for each Once key (as stored), when its done record was last
	// read (the send time) and the token of the record last seen or
	// inserted (once.go).
	dones map[string]doneSeen
	// attempts: for each session, the expiry of its latest open or
	// renewal and when the first call carrying it was sent (see
	// firstSent).
	attempts map[string]attempt
	// reads: the store's server-time reads of the last two TTLs, oldest
	// first (see sendTime).
	reads []serverRead
}

// serverRead is one read of the store's server time: the local time
// before it, and the latest possible server time it gave.
type serverRead struct {
	at     int64
	latest time.Time
}

// maxReads bounds reads, whatever the rate of reads.
const maxReads = 4096

// attempt is one renewal (or open) of a session, as the store saw it.
type attempt struct {
	expires time.Time
	sent    int64
}

// doneSeen is what the recorder saw of a key's done record.
type doneSeen struct {
	readSent int64
	token    uint64
}

// setGrace sets the outage grace of the Clients whose stores r wraps.
func (r *recorder) setGrace(g time.Duration) {
	r.mu.Lock()
	r.grace = int64(g)
	r.mu.Unlock()
}

func newRecorder(w *worker, ttl time.Duration) *recorder {
	return &recorder{w: w, ttl: int64(ttl), margin: int64(ttl / 20), now: history.Now,
		sessions: make(map[string]*predSession), claims: make(map[leaseID]predClaim), holds: make(map[leaseID]*predHold),
		dones: make(map[string]doneSeen), attempts: make(map[string]attempt)}
}

// opened records a session opened by a request sent at sent whose reply
// arrived at reply.
func (r *recorder) opened(id string, sent, reply int64) {
	dl := sent + r.ttl - r.margin
	if reply >= dl {
		return // the library will not use it either
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[id] = &predSession{deadline: dl}
}

// renewed records a renewal of session id, sent at sent and confirmed at
// reply, and moves the deadline of the session's holds.
func (r *recorder) renewed(id string, sent, reply int64) {
	for _, ev := range r.renewedLocked(id, sent, reply) {
		r.w.emit(ev)
	}
}

// renewedLocked applies a renewal under r.mu and returns the deadline
// events to write. They are written once r.mu is released: a write can
// block for long (a full pipe, the disk), and r.mu is what a hold's end
// reads its deadline under, and what the library waits for when it reads
// the server's time (ServerTime, which it may call under its keeper's
// lock, the one its deadline timer takes to signal a loss).
func (r *recorder) renewedLocked(id string, sent, reply int64) []history.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[id]
	if s == nil || s.retired {
		return nil
	}
	dl := sent + r.ttl - r.margin
	past := reply >= s.deadline
	switch {
	case past && r.givenUp(s, reply):
		s.retired = true // confirmed too late to count: the session is over
		return nil
	case past && reply >= dl:
		// Suspended (with a grace), and this renewal came back past its
		// own bound: it resumes nothing, and the session stays suspended
		// for a later renewal to resume (the library lets its lease
		// confirm nothing then, and renews again).
		return nil
	}
	if dl <= s.deadline {
		return nil
	}
	old := s.deadline
	s.deadline = dl
	if past {
		// A resume: the session's holds were lost at its deadline (a
		// suspension loses them, and they stay lost); the resume keeps
		// their claims, and a hold that takes one back begins anew
		// (holding). Their deadlines stay where they were: a hold's
		// loss may be recorded after the resume (its watcher runs
		// when scheduled), with the deadline it was lost at.
		for _, h := range r.holds {
			if h.session == id && h.lostAt == 0 {
				h.lostAt = old
			}
		}
		return nil
	}
	var evs []history.Event
	for lid, h := range r.holds {
		if h.session == id && h.lostAt == 0 {
			evs = append(evs, history.Event{Ev: history.EvDeadline, Key: lid.key, Token: lid.token, T: reply, DL: dl, Src: history.SrcPred})
		}
	}
	return evs
}

// givenUp reports whether s, whose deadline has passed, is over for good
// at reply. Without a grace it is: the session ended at its deadline.
// With one the library suspends the session there, and resumes it after
// a renewal confirmed before that renewal's own deadline (sent + TTL −
// TTL/20) if the store's record of up-time shows that no other process
// could have found it expired; a renewal confirmed past its own deadline
// resumes nothing, and a later one may; it gives the session up at its
// deadline + grace + TTL. The recorder does not read that record: it
// counts every renewal that may resume until then, so that its
// prediction is never earlier than the library's deadline after a resume
// (a session the library retired instead holds nothing more).
func (r *recorder) givenUp(s *predSession, reply int64) bool {
	return r.grace <= 0 || reply >= s.deadline+r.grace+r.ttl
}

// readServerTime records a read of the server's time that began at at
// and gave latest as the latest possible server time.
func (r *recorder) readServerTime(at int64, latest time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	drop := 0
	for drop < len(r.reads) && (r.reads[drop].at < at-2*r.ttl || len(r.reads)-drop >= maxReads) {
		drop++
	}
	r.reads = append(r.reads[drop:], serverRead{at: at, latest: latest})
}

// sendTime returns the send time that an open or renewal asking for
// expires, whose store call began at call, counts from: the latest read
// of the server's time begun by then that expires is a TTL past (call if
// none).
//
// The engine reads its clock, then the server's time, computes the expiry
// a TTL past its latest possible value (or later), and then calls the
// store; the library's deadline counts from its own clock reading, before
// the engine's. On a loaded machine the process may stall between the
// server-time read and the store call: counted from the call, the
// prediction would lie past the time from which the stored expiry lets
// others take over, and a killed holder's takeover would look early. The
// read the expiry came from qualifies, and began after the library read
// its clock, so the prediction is still never earlier than the library's
// deadline; every read that qualifies began at least a TTL (of server
// time) before the expiry, so no one takes over before it plus the TTL.
func (r *recorder) sendTime(expires time.Time, call int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	sent, found := call, false
	// Reads of other goroutines may be recorded out of order: the latest
	// that qualifies, wherever it is.
	for _, rd := range r.reads {
		if rd.at <= call && (!found || rd.at > sent) && !rd.latest.Add(time.Duration(r.ttl)).After(expires) {
			sent, found = rd.at, true
		}
	}
	return sent
}

// firstSent returns when the first store call of the renewal that sent
// expires to session id was sent. One renewal may take two calls with
// the same expiry (an update that failed, then the insert of the next
// generation, or an insert answered ErrExists, then an update), and the
// library counts it from its own send time, before the first; the
// second call's send time would move the predicted deadline past the
// library's by the first call's whole wait (hundreds of milliseconds on
// a loaded machine), and a takeover after the library's deadline would
// look early.
func (r *recorder) firstSent(id string, expires time.Time, sent int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.attempts[id]; ok && a.expires.Equal(expires) {
		return a.sent
	}
	r.attempts[id] = attempt{expires: expires, sent: sent}
	return sent
}

// gone records that the backend no longer knows session id.
func (r *recorder) gone(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sessions[id]; s != nil {
		s.retired = true
	}
}

// claimed records that the store confirmed a claim of key's epoch token.
func (r *recorder) claimed(key string, token uint64, session, nonce string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims[leaseID{key, token}] = predClaim{session: session, nonce: nonce}
}

// holding records that the claim of key's epoch token began to hold at t
// (its deadline event is written once r.mu is released, as renewed's).
func (r *recorder) holding(key string, token uint64, t int64) {
	r.mu.Lock()
	id := leaseID{key, token}
	c, ok := r.claims[id]
	if !ok {
		r.mu.Unlock()
		return // not a claim this process's store confirmed
	}
	s := r.sessions[c.session]
	if s == nil || s.retired || t >= s.deadline {
		r.mu.Unlock()
		return // the library will not count the hold either
	}
	r.holds[id] = &predHold{session: c.session, nonce: c.nonce}
	ev := history.Event{Ev: history.EvDeadline, Key: key, Token: token, T: t, DL: s.deadline, Src: history.SrcPred}
	r.mu.Unlock()
	r.w.emit(ev)
}

// ended forgets the claim of key's epoch token inserted with nonce, once
// its end is sent.
func (r *recorder) ended(key string, token uint64, nonce string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := leaseID{key, token}
	if c, ok := r.claims[id]; ok && c.nonce == nonce {
		delete(r.claims, id)
	}
	if h := r.holds[id]; h != nil && h.nonce == nonce {
		delete(r.holds, id)
	}
}

// deadline returns the predicted deadline of a hold (0 if unknown).
func (r *recorder) deadline(key string, token uint64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.holds[leaseID{key, token}]
	if h == nil {
		return 0
	}
	if h.lostAt != 0 {
		return h.lostAt
	}
	if s := r.sessions[h.session]; s != nil {
		return s.deadline
	}
	return 0
}

// forget drops a hold.
func (r *recorder) forget(key string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.holds, leaseID{key, token})
}

// recordingStore wraps a Client's store and tells the recorder about
// every session opened and renewed, every claim confirmed and every end
// sent.
type recordingStore struct {
	driver.Store
	rec *recorder
}

// over returns store for dsync.NewClient, such that the Client calls it
// through the recorder.
// hints, if the Client has direct hints, is given their transport.
func (r *recorder) over(store driver.Store, hints func(*hint.Feed)) driver.Store {
	return clienthook.Wrap(store, clienthook.Settings{WrapStore: r.wrap, Hints: hints})
}

// wrap returns s through a recording store.
func (r *recorder) wrap(s driver.Store) driver.Store {
	return &recordingStore{Store: s, rec: r}
}

// Roles passes the roles of the store on, hints' records among them,
// which write no document of a key's queue (nothing to record), but for
// runs, which the recording store counts (GetRun), and the renewals with
// a record of up-time, which it records (uptimeStore).
func (s *recordingStore) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Runs = s
	if r.Uptime != nil {
		r.Uptime = &uptimeStore{UptimeStore: r.Uptime, rec: s.rec}
	}
	return r
}

// uptimeStore records the renewals a Client with an outage grace sends
// through the store's Uptime role, as recordingStore.RenewSession does.
type uptimeStore struct {
	driver.UptimeStore
	rec *recorder
}

func (s *uptimeStore) RenewSessionUp(ctx context.Context, id string, gen int, expires time.Time, up []driver.UpSpan) (time.Time, bool, error) {
	var applied time.Time
	found, err := s.rec.renewSession(id, expires, func() (found bool, err error) {
		applied, found, err = s.UptimeStore.RenewSessionUp(ctx, id, gen, expires, up)
		return found, err
	})
	return applied, found, err
}

// InsertSessionUp records an insert of a session document marked through
// the record of up-time, as recordingStore.InsertSession does.
func (s *uptimeStore) InsertSessionUp(ctx context.Context, sess driver.Session) error {
	return s.rec.insertSession(sess, func() error { return s.UptimeStore.InsertSessionUp(ctx, sess) })
}

// InsertSession: generation 0 opens a session; a later one is a renewal
// (after one of unknown outcome).
func (s *recordingStore) InsertSession(ctx context.Context, sess driver.Session) error {
	return s.rec.insertSession(sess, func() error { return s.Store.InsertSession(ctx, sess) })
}

// insertSession records the insert of sess's document that insert sends.
func (r *recorder) insertSession(sess driver.Session, insert func() error) error {
	sent := r.firstSent(sess.ID, sess.ExpiresAt, r.sendTime(sess.ExpiresAt, r.now()))
	err := insert()
	switch {
	case err != nil:
	case sess.Gen == 0:
		r.opened(sess.ID, sent, r.now())
	default:
		r.renewed(sess.ID, sent, r.now())
	}
	return err
}

func (s *recordingStore) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	return s.rec.renewSession(id, expires, func() (bool, error) { return s.Store.RenewSession(ctx, id, gen, expires) })
}

// renewSession records the renewal of session id to expires that renew
// sends: renewed if found, gone if not.
func (r *recorder) renewSession(id string, expires time.Time, renew func() (bool, error)) (bool, error) {
	sent := r.firstSent(id, expires, r.sendTime(expires, r.now()))
	found, err := renew()
	switch {
	case err != nil:
	case found:
		r.renewed(id, sent, r.now())
	default:
		r.gone(id)
	}
	return found, err
}

// ServerTime records when each read of the server's time began, and what
// it gave (see sendTime): the engine computes every expiry it sends from
// one.
func (s *recordingStore) ServerTime() driver.Interval {
	at := s.rec.now()
	iv := s.Store.ServerTime()
	s.rec.readServerTime(at, iv.Latest)
	return iv
}

func (s *recordingStore) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	dup, err := s.Store.InsertOrdered(ctx, docs)
	// The claim is the first document, or follows its segment's gates (a
	// start): confirmed if everything up to it landed.
	for i, d := range docs {
		if d.Kind == driver.KindClaim {
			if err == nil && (dup == -1 || dup > i) {
				s.rec.claimed(d.Key, d.Epoch, d.Session, d.Nonce)
			}
			break
		}
	}
	return dup, err
}

// Insert: an end is forgotten before it is sent: from then on the claim
// may have ended for others. A done record inserted is seen.
func (s *recordingStore) Insert(ctx context.Context, d driver.Doc) error {
	if d.Kind == driver.KindRelease || d.Kind == driver.KindWithdraw {
		s.rec.ended(d.Key, d.Epoch, d.Nonce)
	}
	err := s.Store.Insert(ctx, d)
	if err == nil && d.Kind == driver.KindDone {
		s.rec.sawDone(d.Key, d.Token)
	}
	return err
}

// GetRun counts the runs read, for the suite's check that workers that
// read runs did; they hold claims and markers, nothing to record. A store
// that reads none answers driver.ErrRunsUnsupported, as one whose server
// cannot read them does.
func (s *recordingStore) GetRun(ctx context.Context, key string, from, to uint64) ([]driver.Doc, error) {
	rr := s.Store.Roles().Runs
	if rr == nil {
		return nil, driver.ErrRunsUnsupported
	}
	docs, err := rr.GetRun(ctx, key, from, to)
	if err == nil {
		s.rec.w.counts.runs.Add(1)
	}
	return docs, err
}

// Get: a read of a done record is noted (when it was sent, and the token
// of a record found).
func (s *recordingStore) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	sent := history.Now()
	d, found, err := s.Store.Get(ctx, id)
	if key, ok := strings.CutSuffix(id, "#done"); ok && err == nil {
		s.rec.readDone(key, sent)
		if found && d.Kind == driver.KindDone {
			s.rec.sawDone(key, d.Token)
		}
	}
	return d, found, err
}

// readDone records that key's done record was read by a request sent at
// sent.
func (r *recorder) readDone(key string, sent int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.dones[key]
	d.readSent = sent
	r.dones[key] = d
}

// sawDone records that key's done record names token.
func (r *recorder) sawDone(key string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.dones[key]
	d.token = token
	r.dones[key] = d
}

// done returns what was seen of key's done record.
func (r *recorder) done(key string) doneSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dones[key]
}
