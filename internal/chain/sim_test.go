package chain_test

import (
	"container/heap"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/chain"
)

// The simulation runs the protocol of several owners against one MemStore
// on virtual time, one step at a time in an order drawn from a seed, so a
// failing seed replays exactly (go test -run TestSimulation -chain.seed=N).
//
// Every request reaches the store after a random delay and its reply comes
// back after another, so requests of one owner overtake each other; a few
// are held back far longer than the caller waits (the caller sees an
// unknown outcome, the request is applied late). A session renewal's
// update is torn the way FerretDB's are: read on arrival, written a delay
// later. Owners crash, pause, give
// up waiting, TryLock, and lose their sessions; holders prune. Each seed's
// history goes through integration/history's checker.

var (
	simSeeds = flag.Int("chain.seeds", 0, "simulation seeds to run (default 2000; 1000 with -race, 200 with -short)")
	simSeed  = flag.Int64("chain.seed", -1, "run only this simulation seed, verbosely")
)

const (
	simTTL      = time.Second
	simInterval = simTTL / 3
	simMargin   = simTTL / 20
	simEps      = 2 * time.Millisecond   // half-width of the server-time estimate
	simTimeout  = 300 * time.Millisecond // how long a caller waits for a reply
	simPoll     = 100 * time.Millisecond
	simLength   = 20 * time.Second
)

func simConfig() chain.Config {
	return chain.Config{
		ViewTrust:     100 * time.Millisecond,
		AcquireWindow: 200 * time.Millisecond,
		PruneDelay:    700 * time.Millisecond,
		PruneEvery:    4,
	}
}

var errSimTimeout = errors.New("sim: no reply in time")

// simStats counts what a run exercised, so the test can show that the hard
// paths ran: writes applied after their sender gave up, pruning, sessions
// judged dead, claims found to have landed below the floor.
type simStats struct {
	late, prunes, dead, withdrawn, sessionsLost int
	torn                                        int // renewals whose write lowered a session's expiry
}

func (a *simStats) add(b simStats) {
	a.late += b.late
	a.prunes += b.prunes
	a.dead += b.dead
	a.withdrawn += b.withdrawn
	a.sessionsLost += b.sessionsLost
	a.torn += b.torn
}

type simEvent struct {
	at  time.Duration
	seq int
	fn  func()
}

type eventHeap []*simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type sim struct {
	rng   *rand.Rand
	now   time.Duration
	q     eventHeap
	seq   int
	yield chan struct{}
	store *chain.MemStore
	// sessions: each session's documents, expiry by generation (see
	// net.RenewSession).
	sessions map[string]map[int]time.Time
	t0       time.Time
	log      []history.Event
	actors   []*actor
	ids      int
	bug      chain.Bug
	lateP    float64
	stats    simStats
	trace    func(string, ...any)
}

func (s *sim) tracef(format string, args ...any) {
	if s.trace != nil {
		s.trace(format, args...)
	}
}

func (s *sim) at(at time.Duration, fn func()) {
	heap.Push(&s.q, &simEvent{at: at, seq: s.seq, fn: fn})
	s.seq++
}

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

// An actor is one goroutine of an owner. Only one actor runs at a time:
// the scheduler steps it, and it yields back when it blocks.
type actor struct {
	s      *sim
	o      *owner
	resume chan struct{}
	done   bool
}

func (s *sim) spawn(o *owner, body func(a *actor)) {
	a := &actor{s: s, o: o, resume: make(chan struct{})}
	s.actors = append(s.actors, a)
	go func() {
		defer func() {
			a.done = true
			s.yield <- struct{}{}
		}()
		<-a.resume
		if !o.crashed {
			body(a)
		}
	}()
	s.at(s.now, func() { s.step(a) })
}

func (s *sim) step(a *actor) {
	if a.done {
		return
	}
	if a.o.pausedUntil > s.now {
		s.at(a.o.pausedUntil, func() { s.step(a) })
		return
	}
	a.resume <- struct{}{}
	<-s.yield
}

// block parks the actor until the scheduler steps it again. An actor whose
// owner crashed meanwhile ends there.
func (a *actor) block() {
	a.s.yield <- struct{}{}
	<-a.resume
	if a.o.crashed {
		runtime.Goexit()
	}
}

func (a *actor) sleep(d time.Duration) {
	a.s.at(a.s.now+max(d, time.Microsecond), func() { a.s.step(a) })
	a.block()
}

// net is the network between the owners and the store: every call is one
// request, made by the actor its context carries.
type net struct{ s *sim }

var _ chain.Store = net{}

type actorKey struct{}

func (a *actor) ctx() context.Context { return context.WithValue(context.Background(), actorKey{}, a) }

func (n net) call(ctx context.Context, op func()) error {
	return n.callTorn(ctx, func() func() { op(); return nil })
}

// callTorn sends a request whose read happens when it arrives and whose
// write, if read returns one, a delay later; the reply follows the write.
func (n net) callTorn(ctx context.Context, read func() (write func())) error {
	s, a := n.s, ctx.Value(actorKey{}).(*actor)
	var woken, timedOut bool
	sent := s.now
	reply := func() {
		if s.trace != nil {
			s.trace("  applied at %v for %s (sent %v)", s.now, a.o.name, sent)
		}
		s.at(s.now+s.delay(), func() {
			if !woken {
				woken = true
				s.step(a)
			}
		})
	}
	s.at(s.now+s.delay(), func() {
		if timedOut {
			s.stats.late++
		}
		write := read()
		if write == nil {
			reply()
			return
		}
		s.at(s.now+s.delay(), func() {
			write()
			reply()
		})
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

var bg = context.Background()

func (n net) Insert(ctx context.Context, d chain.Doc) (err error) {
	if cerr := n.call(ctx, func() {
		switch d.Kind {
		case chain.KindDead:
			n.s.stats.dead++
		case chain.KindWithdraw:
			n.s.stats.withdrawn++
		}
		err = n.s.store.Insert(bg, d)
		n.s.tracef("insert %v -> %v", d, err)
	}); cerr != nil {
		return cerr
	}
	return err
}

func (n net) InsertChained(ctx context.Context, d, prev chain.Doc) (prevExisted bool, err error) {
	if cerr := n.call(ctx, func() {
		prevExisted, err = n.s.store.InsertChained(bg, d, prev)
		n.s.tracef("insertchained %v after %s -> %v %v", d, prev.ID, prevExisted, err)
	}); cerr != nil {
		return false, cerr
	}
	return prevExisted, err
}

func (n net) Get(ctx context.Context, id string) (d chain.Doc, found bool, err error) {
	if cerr := n.call(ctx, func() { d, found, err = n.s.store.Get(bg, id); n.s.tracef("get %s -> %v %v %v", id, d, found, err) }); cerr != nil {
		return chain.Doc{}, false, cerr
	}
	return d, found, err
}

func (n net) Newest(ctx context.Context, key string) (d chain.Doc, found bool, err error) {
	if cerr := n.call(ctx, func() { d, found, err = n.s.store.Newest(bg, key); n.s.tracef("newest %s -> %v %v", key, d, found) }); cerr != nil {
		return chain.Doc{}, false, cerr
	}
	return d, found, err
}

func (n net) Floor(ctx context.Context, key string, below uint64) (f chain.Floor, found bool, err error) {
	if cerr := n.call(ctx, func() {
		f, found, err = n.s.store.Floor(bg, key, below)
		n.s.tracef("floor %s below %d -> %v", key, below, f)
	}); cerr != nil {
		return chain.Floor{}, false, cerr
	}
	return f, found, err
}

func (n net) RaiseFloor(ctx context.Context, key string, f chain.Floor, sent time.Time) (err error) {
	if cerr := n.call(ctx, func() { err = n.s.store.RaiseFloor(bg, key, f, sent); n.s.tracef("raisefloor %s %v", key, f) }); cerr != nil {
		return cerr
	}
	return err
}

func (n net) Prune(ctx context.Context, key string, below uint64, sentBefore time.Time) (err error) {
	if cerr := n.call(ctx, func() {
		n.s.stats.prunes++
		err = n.s.store.Prune(bg, key, below, sentBefore)
		n.s.tracef("prune %s below %d", key, below)
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

func (n net) InsertSession(ctx context.Context, sess chain.Session) (err error) {
	if cerr := n.call(ctx, func() {
		gens := n.s.sessions[sess.ID]
		if gens == nil {
			gens = make(map[int]time.Time)
			n.s.sessions[sess.ID] = gens
		}
		if _, ok := gens[sess.Gen]; ok {
			err = chain.ErrExists
		} else {
			gens[sess.Gen] = sess.ExpiresAt
		}
		n.s.tracef("insertsession %s gen %d %v -> %v", sess.ID, sess.Gen, sess.ExpiresAt.Sub(n.s.t0), err)
	}); cerr != nil {
		return cerr
	}
	return err
}

func (n net) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (found bool, err error) {
	if cerr := n.callTorn(ctx, func() func() {
		old, ok := n.s.sessions[id][gen]
		found = ok
		return func() {
			if _, still := n.s.sessions[id][gen]; ok && still {
				if old.Before(expires) {
					old = expires
				}
				if cur := n.s.sessions[id][gen]; old.Before(cur) {
					n.s.stats.torn++
				}
				n.s.sessions[id][gen] = old
			}
			n.s.tracef("renewsession %s gen %d %v -> %v", id, gen, expires.Sub(n.s.t0), ok)
		}
	}); cerr != nil {
		return false, cerr
	}
	return found, nil
}

func (n net) GetSession(ctx context.Context, id string) (sess chain.Session, found bool, err error) {
	if cerr := n.call(ctx, func() {
		sess, found = chain.LatestGen(id, n.s.sessions[id])
		n.s.tracef("getsession %s -> %v %v", id, sess.ExpiresAt.Sub(n.s.t0), found)
	}); cerr != nil {
		return chain.Session{}, false, cerr
	}
	return sess, found, err
}

// simClock: every owner's monotonic clock runs at true time; the server's
// time is known to within simEps.
type simClock struct{ s *sim }

func (c simClock) ServerNow() chain.Interval {
	t := c.s.t0.Add(c.s.now)
	return chain.Interval{Earliest: t.Add(-simEps), Latest: t.Add(simEps)}
}
func (c simClock) Mono() time.Duration { return c.s.now }

type session struct {
	id       string
	deadline time.Duration // local: send of the last confirmed renewal + TTL − margin
	retired  bool
}

type owner struct {
	s           *sim
	pid         int
	name        string
	eng         *chain.Engine
	crashed     bool
	pausedUntil time.Duration
	sess        *session
	holds       map[*chain.Claim]*session
}

func (o *owner) record(ev history.Event) {
	ev.Worker, ev.PID, ev.Owner = o.name, o.pid, o.name
	ev.TTL, ev.Margin = int64(simTTL), int64(simMargin)
	o.s.log = append(o.s.log, ev)
}

// armDeadline ends the session at its local deadline unless a renewal
// confirmed in time has moved it.
func (o *owner) armDeadline(ss *session) {
	o.s.at(ss.deadline, func() {
		if !ss.retired && o.s.now >= ss.deadline {
			o.retire(ss)
		}
	})
}

// retire ends a session for good: its holds are lost, and its claims are
// never used again.
func (o *owner) retire(ss *session) {
	if ss.retired {
		return
	}
	ss.retired = true
	o.s.stats.sessionsLost++
	for c, hs := range o.holds {
		if hs == ss {
			o.record(history.Event{Ev: history.EvLost, Key: c.Key, Token: c.Epoch, T: int64(o.s.now), DL: int64(ss.deadline), Src: history.SrcLib})
		}
	}
}

func (o *owner) keeper(a *actor) {
	s, ctx := o.s, a.ctx()
	failed := false
	for s.now < simLength {
		if o.sess == nil || o.sess.retired {
			id, sent, err := o.eng.OpenSession(ctx, simTTL)
			if err != nil {
				a.sleep(20 * time.Millisecond)
				continue
			}
			ss := &session{id: id, deadline: sent + simTTL - simMargin}
			if s.now >= ss.deadline {
				continue
			}
			o.sess = ss
			o.armDeadline(ss)
		}
		ss := o.sess
		if failed {
			a.sleep(simInterval / 4)
		} else {
			a.sleep(simInterval)
		}
		if ss.retired {
			continue
		}
		found, sent, err := o.eng.RenewSession(ctx, ss.id, simTTL)
		failed = err != nil
		switch {
		case err != nil:
		case !found:
			o.retire(ss)
		case !ss.retired && s.now < ss.deadline:
			if dl := sent + simTTL - simMargin; dl > ss.deadline {
				ss.deadline = dl
				o.armDeadline(ss)
				for c, hs := range o.holds {
					if hs == ss {
						o.record(history.Event{Ev: history.EvDeadline, Key: c.Key, Token: c.Epoch, T: int64(s.now), DL: int64(dl), Src: history.SrcLib})
					}
				}
			}
		}
		_, _ = o.eng.Flush(ctx)
	}
}

func (o *owner) worker(a *actor, keys []string) {
	s, ctx := o.s, a.ctx()
	for s.now < simLength {
		ss := o.sess
		if ss == nil || ss.retired {
			a.sleep(10 * time.Millisecond)
			continue
		}
		key := keys[s.rng.IntN(len(keys))]
		try := s.rng.Float64() < 0.2
		c, err := o.eng.Claim(ctx, key, o.name, ss.id, try)
		if err != nil {
			a.sleep(time.Duration(5+s.rng.IntN(25)) * time.Millisecond)
			continue
		}
		start, patience := s.now, time.Duration(100+s.rng.IntN(3000))*time.Millisecond
		for {
			if ss.retired {
				_ = o.eng.End(ctx, c, false)
				break
			}
			head, b, err := o.eng.Walk(ctx, c)
			if err != nil {
				a.sleep(10 * time.Millisecond)
				continue
			}
			if head {
				if ss.retired || s.now >= ss.deadline {
					_ = o.eng.End(ctx, c, false)
					break
				}
				o.holds[c] = ss
				o.record(history.Event{Ev: history.EvAcquire, Key: key, Token: c.Epoch, T: int64(s.now), DL: int64(ss.deadline), Src: history.SrcLib})
				a.sleep(time.Duration(s.rng.IntN(300)) * time.Millisecond)
				o.record(history.Event{Ev: history.EvEnd, Key: key, Token: c.Epoch, T: int64(s.now), Lost: ss.retired})
				delete(o.holds, c)
				_ = o.eng.End(ctx, c, true)
				break
			}
			if try || s.now-start > patience {
				_ = o.eng.End(ctx, c, false)
				break
			}
			wait := simPoll
			if u := b.ExpiresAt.Sub(s.t0.Add(s.now)) + 2*simEps + time.Millisecond; u > 0 && u < wait {
				wait = u
			}
			a.sleep(wait)
		}
	}
}

// observer polls the head of the queue, as Election.Leader does.
func (o *owner) observer(a *actor, keys []string) {
	s, ctx := o.s, a.ctx()
	for s.now < simLength {
		a.sleep(time.Duration(20+s.rng.IntN(60)) * time.Millisecond)
		key := keys[s.rng.IntN(len(keys))]
		sent := s.now
		head, found, err := o.eng.Head(ctx, key)
		s.tracef("HEAD %s by %s sent %v -> %v %v %v", key, o.name, sent, head, found, err)
		if err != nil || !found {
			continue
		}
		s.log = append(s.log, history.Event{Ev: history.EvPoll, Worker: o.name + "-observer", PID: 1000 + o.pid, Key: key, Token: head.Epoch, Owner: head.Owner, T: int64(sent)})
	}
}

// runSim runs one seed and returns the checker's report and the number of
// late writes the store applied.
func runSim(t *testing.T, seed int64, bug chain.Bug, verbose bool) (*history.Report, simStats) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	s := &sim{
		rng:      rng,
		now:      time.Second,
		yield:    make(chan struct{}),
		store:    chain.NewMemStore(nil),
		sessions: make(map[string]map[int]time.Time),
		t0:       time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		bug:      bug,
		lateP:    []float64{0, 0.01, 0.03, 0.08}[rng.IntN(4)],
	}
	if verbose {
		s.trace = func(f string, args ...any) { t.Logf("%v "+f, append([]any{s.now}, args...)...) }
	}
	nOwners := 3 + rng.IntN(4)
	keys := []string{"k1", "k2"}[:1+rng.IntN(2)]
	var owners []*owner
	for i := range nOwners {
		o := &owner{s: s, pid: i + 1, name: fmt.Sprintf("o%d", i+1), holds: make(map[*chain.Claim]*session)}
		cfg := simConfig()
		cfg.NewID = func() string { s.ids++; return fmt.Sprintf("s%d", s.ids) }
		eng, err := chain.New(net{s}, simClock{s}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		eng.SetBug(bug)
		o.eng = eng
		owners = append(owners, o)
		s.spawn(o, o.keeper)
		s.spawn(o, func(a *actor) { o.worker(a, keys) })
		if i < 2 {
			s.spawn(o, func(a *actor) { o.observer(a, keys) })
		}
		// Faults: a crash (the process is gone, its requests in flight
		// still land) or pauses (a GC pause or SIGSTOP: nothing runs).
		if rng.Float64() < 0.3 {
			s.at(time.Second+time.Duration(rng.Int64N(int64(simLength))), func() { o.crashed = true })
		}
		for range rng.IntN(3) {
			from := time.Second + time.Duration(rng.Int64N(int64(simLength)))
			d := time.Duration(rng.Int64N(int64(2 * simTTL)))
			s.at(from, func() { o.pausedUntil = max(o.pausedUntil, s.now+d) })
		}
	}
	for s.q.Len() > 0 {
		ev := heap.Pop(&s.q).(*simEvent)
		if ev.at > simLength+5*simTTL {
			break
		}
		s.now = ev.at
		ev.fn()
	}
	// Stop every actor still parked.
	for _, o := range owners {
		o.crashed, o.pausedUntil = true, 0
	}
	for _, a := range s.actors {
		s.step(a)
	}
	if verbose {
		for _, ev := range s.log {
			t.Logf("%s %s %s#%d t=%v dl=%v lost=%v", ev.Ev, ev.Owner, ev.Key, ev.Token, time.Duration(ev.T), time.Duration(ev.DL), ev.Lost)
		}
	}
	return history.Check(s.log, nil), s.stats
}

func seeds() []int64 {
	if *simSeed >= 0 {
		return []int64{*simSeed}
	}
	n := *simSeeds
	if n == 0 {
		n = 2000
		switch {
		case testing.Short():
			n = 200
		case raceEnabled:
			n = 1000
		}
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// TestSimulation: on every seed, no two holds of a key are valid at once,
// tokens increase in the order holds begin, no hold outlives its deadline
// unannounced, and observers polling the head of the queue never see it
// go back (nor a head owned by another owner than the hold of its token).
func TestSimulation(t *testing.T) {
	holds, handoffs, losses, polls := 0, 0, 0, 0
	var total simStats
	for _, seed := range seeds() {
		r, st := runSim(t, seed, chain.NoBug, *simSeed >= 0)
		total.add(st)
		holds += r.NumHolds
		handoffs += r.Handoffs
		losses += r.Losses
		polls += r.Observations
		if !r.OK() {
			var b strings.Builder
			for _, v := range r.Violations {
				fmt.Fprintf(&b, "\n  %v", v)
			}
			t.Fatalf("seed %d (replay: go test ./internal/chain -run TestSimulation -chain.seed=%d):%s", seed, seed, b.String())
		}
	}
	t.Logf("%d seeds: %d holds, %d handoffs, %d losses, %d observations; %+v", len(seeds()), holds, handoffs, losses, polls, total)
	if total.torn > 0 {
		t.Fatalf("%d session renewals wrote back a lower expiry than a later renewal's", total.torn)
	}
	if *simSeed < 0 && (holds == 0 || polls == 0 || handoffs == 0 || losses == 0 || total.late == 0 || total.prunes == 0 || total.dead == 0 || total.withdrawn == 0) {
		t.Fatalf("the simulation exercised too little: %d holds, %d handoffs, %d losses; %+v", holds, handoffs, losses, total)
	}
}

// TestSimulationCatchesPlantedBugs is the negative control: each planted
// protocol error must show up as a violation on some seed.
func TestSimulationCatchesPlantedBugs(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  chain.Bug
	}{
		{"withdrawal recorded as release", chain.BugWithdrawAsRelease},
		{"no floor proof for inserts", chain.BugNoFloorProof},
		{"end markers named by session, not by claim", chain.BugEndBySession},
		{"renewing a session document after an unknown outcome", chain.BugRenewSameGen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, seed := range seeds() {
				if r, _ := runSim(t, seed, tc.bug, false); !r.OK() {
					t.Logf("caught on seed %d: %v", seed, r.Violations[0])
					return
				}
			}
			t.Errorf("no seed out of %d caught it", len(seeds()))
		})
	}
}
