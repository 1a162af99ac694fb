package apisim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/statuspage"
)

// Watchers: each incarnation reads who leads election "e" as watchers
// do, and the history keeps what they saw (CheckWatch judges it).

// Sources: how a watcher read who leads.
const (
	WatchLeader  = "leader"  // Election.Leader, polled
	WatchQueue   = "queue"   // statuspage.Reader.Queue of the election's lease key: its first claim that Holds
	WatchObserve = "observe" // what Election.Observe sent
	WatchStatus  = "status"  // the status reader's (dsync status, the status page) Election.Leader
)

// Observation is one report of who leads, as a watcher got it.
type Observation struct {
	Proc, Inc int    // the process and its incarnation (from 1)
	Source    string // WatchLeader, WatchQueue or WatchObserve
	Key       string // the election's lease key, as stored
	Token     uint64
	Leader    string // the leader's ID (its claim's owner)
	Rev       uint64 // Info.Rev (Leader, Observe and the status reader)
	Value     string // Info.Value (Leader, Observe and the status reader)
	// Call is when the read began (for Observe, the earliest it can have:
	// its poll's timeout before T), T when the watcher got the report.
	Call, T time.Time
	// Landed is when a claim of Key with Token and Leader's ID landed in
	// the store, at or before T, by the oracle (zero: none did).
	Landed time.Time
	// Missing: that claim's session was missing from the sessions
	// collection at T, or had lost its first generation (the collection
	// emptied, and a later generation inserted since): the claim is not
	// Expired then, whatever its expiry (statuspage.ClaimInfo.Expired).
	Missing bool
}

func (o *Observation) String() string {
	return fmt.Sprintf("p%d/%d %s %s#%d by %s rev %d %q [%v, %v]", o.Proc, o.Inc, o.Source, o.Key, o.Token, o.Leader, o.Rev, o.Value, o.Call.Format(tf), o.T.Format(tf))
}

// watchPoll is how often the watchers' Observe polls; the other reads
// come one at a time, 200 to 1000 ms apart, Leader and the lease key's
// Queue a third of the time each, a Mutex key's Queue two ninths, the
// status reader (which reads every key of the name) one ninth.
const watchPoll = 2 * time.Second

// startWatchers starts the incarnation's watchers: one that polls
// election "e"'s Leader, the Queue of its lease key, the Queue of a
// Mutex's key and the status reader, and one that reads Observe's
// channel. Their draws come from a generator of their own, so that they
// do not move the world's.
func (inc *incarnation) startWatchers() {
	e, err := inc.ps.watcher("e", watchPoll)
	if err != nil {
		panic(err)
	}
	key := storedElection("e")
	ch := e.Observe(inc.ctx)
	inc.wg.Add(2)
	go func() {
		defer inc.wg.Done()
		for info := range ch {
			now := time.Now()
			inc.observe(&Observation{Source: WatchObserve, Key: key, Token: info.Token, Leader: info.ID, Rev: info.Rev, Value: info.Value,
				Call: now.Add(-watchPoll - inc.p.cfg.TTL), T: now})
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(inc.p.w.seed), uint64(inc.p.id<<16|inc.n)))
	go func() {
		defer inc.wg.Done()
		defer e.Close()
		for inc.ctx.Err() == nil {
			time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
			switch x := rng.IntN(9); {
			case x < 3:
				call := time.Now()
				if info, err := e.Leader(inc.ctx); err == nil {
					inc.observe(&Observation{Source: WatchLeader, Key: key, Token: info.Token, Leader: info.ID, Rev: info.Rev, Value: info.Value, Call: call, T: time.Now()})
				}
			case x < 6:
				inc.watchQueue(inc.ps.elections, key)
			case x < 8:
				inc.watchQueue(inc.ps.client, fmt.Sprintf("m%d", x%2))
			default:
				inc.watchStatus(key)
			}
		}
	}()
}

// watchQueue reads key's queue with c, and records its first claim that
// holds, if one does. While the queue shows a claim Expired (whose end a
// claimer has yet to write), it reads again soon, up to watchAgain
// times: a late renewal of its session that lands in that spell is what
// could make it look live again.
func (inc *incarnation) watchQueue(c *dsync.Client, key string) {
	for range watchAgain {
		call := time.Now()
		q, err := statuspage.NewReader(c).Queue(inc.ctx, key)
		if err != nil {
			return
		}
		if i := slices.IndexFunc(q, func(c statuspage.ClaimInfo) bool { return c.Holds }); i >= 0 {
			inc.observe(&Observation{Source: WatchQueue, Key: key, Token: q[i].Token, Leader: q[i].Owner, Call: call, T: time.Now()})
		}
		inc.queueRead(key, call, q)
		if !slices.ContainsFunc(q, func(c statuspage.ClaimInfo) bool { return c.Expired }) {
			return
		}
		time.Sleep(watchAgainGap)
	}
}

// watchAgain bounds the reads of a queue in a row (watchQueue), which
// are watchAgainGap apart.
const (
	watchAgain    = 30
	watchAgainGap = 10 * time.Millisecond
)

// QueueRead is one of a watcher's statuspage.Reader.Queue reads: the claims it
// returned.
type QueueRead struct {
	Proc, Inc int
	Key       string
	Call, T   time.Time
	Claims    []ReadClaim
}

// ReadClaim is a claim as a QueueRead reported it.
type ReadClaim struct {
	Token     uint64
	Nonce     string
	Expired   bool
	ExpiresAt time.Time
	// TTL is its session's (its process's configuration).
	TTL time.Duration
}

// queueRead records a read of key's queue (q), of this incarnation, that
// began at call.
func (inc *incarnation) queueRead(key string, call time.Time, q []statuspage.ClaimInfo) {
	w := inc.p.w
	r := &QueueRead{Proc: inc.p.id, Inc: inc.n, Key: key, Call: call, T: time.Now()}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range q {
		rc := ReadClaim{Token: c.Token, Nonce: c.Nonce, Expired: c.Expired, ExpiresAt: c.ExpiresAt}
		for _, p := range w.procs {
			if _, ok := p.leases[c.Session]; ok {
				rc.TTL = p.cfg.TTL
			}
		}
		r.Claims = append(r.Claims, rc)
	}
	w.hist.QueueReads = append(w.hist.QueueReads, r)
}

// watchStatus reads election "e" as dsync status does (statuspage.Reader,
// through the process's main Client), and records its leader, if one
// leads.
func (inc *incarnation) watchStatus(key string) {
	call := time.Now()
	r := inc.ps.statusReader()
	var got statusSink
	if _, err := r.WalkNamed(inc.ctx, "e", &got); err != nil || got.leader == nil {
		return
	}
	inc.observe(&Observation{Source: WatchStatus, Key: key, Token: got.leader.Token, Leader: got.leader.ID, Rev: got.leader.Rev, Value: got.leader.Value, Call: call, T: time.Now()})
}

// statusSink keeps the leader of the election the status reader hands
// out.
type statusSink struct{ leader *leader.Info }

func (s *statusSink) Lock(statuspage.LockState) error { return nil }

func (s *statusSink) Election(e statuspage.ElectionState) error {
	s.leader = e.Leader
	return nil
}

// observe records o, of this incarnation, with when its claim landed.
func (inc *incarnation) observe(o *Observation) {
	w := inc.p.w
	o.Proc, o.Inc = inc.p.id, inc.n
	w.mu.Lock()
	defer w.mu.Unlock()
	var session string
	for _, p := range w.procs {
		for _, c := range p.claims[claimKey{o.Key, o.Token}] {
			if c.owner == o.Leader && !c.at.After(o.T) && (o.Landed.IsZero() || c.at.Before(o.Landed)) {
				o.Landed, session = c.at, c.session
			}
		}
	}
	if !o.Landed.IsZero() {
		s, found := w.sess.get(session)
		o.Missing = !found || !s.HasFirst
	}
	w.hist.Observations = append(w.hist.Observations, o)
}

// watcherKey is one watcher's stream of reports: CheckWatch judges each
// apart.
type watcherKey struct {
	proc, inc   int
	source, key string
}

func (o *Observation) watcher() watcherKey { return watcherKey{o.Proc, o.Inc, o.Source, o.Key} }
