package apisim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader"
)

// The rolling-upgrade actor (Options.Upgrade): five candidates of one
// election, each a process of its own on a simulated process (its
// network, pauses and clock), with priorities drawn from the seed, the
// version rule (leader.WithVersionRule) and a preemption delay drawn from
// the seed. Once they have settled, it upgrades them one slot at a time
// to the next version: in surge order (start the new candidate, wait
// until the member status shows it, close the old one), or, on a quarter
// of its seeds, stop-first (close the old one, then start the new). Each
// candidate campaigns, and leads until its term ends (preempted, lost,
// or the operator wants the operations under way to end), and again,
// until it is closed. Its terms are holds of the election's key, which
// the usual checkers judge (one leader at a time, Lost() on time), and
// CheckUpgrade (check_upgrade.go) judges what the version rule and the
// priorities promise.

// upgradeElection is the upgraded election's name.
const upgradeElection = "up"

// upgradeSlots is how many candidates the upgrade rolls through.
const upgradeSlots = 5

// upgradeSeed tells the upgrade's plan from the world's draws: the plan
// of a seed does not depend on how its goroutines ran.
const upgradeSeed = 0x75706772616465

// UpgradeRun is what the rolling-upgrade actor did in a run.
type UpgradeRun struct {
	// Calm: the run was calm (Options.Calm), and CheckUpgrade judges the
	// steps, the last leader and the priorities, besides the versions.
	Calm bool
	// StopFirst: each step closed the old candidate before it started
	// the new one (else: surge order).
	StopFirst bool
	// Delay is every candidate's preemption delay (WithPreemption).
	Delay time.Duration
	// MaxTTL and MaxHB are the longest TTL and heartbeat interval of the
	// candidates.
	MaxTTL, MaxHB time.Duration
	// Hosts are the processes the candidates run on: every one, or in a
	// calm run one alone, so that its faults leave spells long enough
	// to judge a step in.
	Hosts      []int
	Candidates []*Candidate
	Steps      []*UpgradeStep
	// Statuses are the member status writes and removals of the
	// candidates that landed, in the order they did.
	Statuses []StatusWrite
	// End is when the actor began to close the candidates left, at the
	// end of the run.
	End time.Time
}

// Candidate is one candidate of the upgraded election.
type Candidate struct {
	ID       string // its Election's ID
	Slot     int
	Proc     int // the simulated process it runs on
	Version  int // its version's major number: "vN.0.0"
	Priority int
	// HB is its heartbeat interval: it counts a member live for three.
	HB time.Duration
	// Start is when it was made and began to campaign; Closed when it
	// began to close (zero: never).
	Start, Closed time.Time
}

func (c *Candidate) String() string {
	return fmt.Sprintf("%s (slot %d, p%d, v%d, priority %d)", c.ID, c.Slot, c.Proc, c.Version, c.Priority)
}

// version is c's version as it reports it.
func (c *Candidate) version() string { return fmt.Sprintf("v%d.0.0", c.Version) }

// UpgradeStep is one step of the upgrade: slot Slot from Old to New.
type UpgradeStep struct {
	Slot     int
	Old, New *Candidate
	// Start is when the step began (its first start or close), Done
	// when its close and start were both done (zero: the run ended
	// first), End when the next step began, or the run's end.
	Start, Done, End time.Time
}

// StatusWrite is one member status write of a candidate that landed, or
// its removal (Delete).
type StatusWrite struct {
	Member string
	At     time.Time
	Delete bool
}

// upgrader runs the rolling upgrade of one seed.
type upgrader struct {
	w    *world
	rng  *rand.Rand
	run  *UpgradeRun
	wg   sync.WaitGroup
	live map[int]*running // the candidate of each slot
}

// running is a candidate under way.
type running struct {
	c    *Candidate
	stop context.CancelFunc
}

// newUpgrader plans the rolling upgrade of w's seed, before the run
// begins.
func newUpgrader(w *world, calm bool) *upgrader {
	u := &upgrader{w: w, rng: rand.New(rand.NewPCG(uint64(w.seed), upgradeSeed)), live: map[int]*running{}}
	u.run = &UpgradeRun{Calm: calm, StopFirst: u.rng.IntN(4) == 0, Delay: time.Duration(u.rng.Int64N(int64(time.Second)))}
	u.run.Hosts = []int{u.rng.IntN(len(w.procs))}
	if !calm {
		u.run.Hosts = u.rng.Perm(len(w.procs))
	}
	if calm {
		// After an emptying a key may wait up to three bucket spans
		// (docs/operations.md), longer than a run: a calm upgrade has
		// none (nor the stalled link's, stall.go), so that its spells
		// are judged.
		w.rates.emptyings, w.stall = false, stalls{}
	}
	for slot := range upgradeSlots {
		u.run.MaxTTL = max(u.run.MaxTTL, u.host(slot).cfg.TTL)
	}
	w.mu.Lock()
	w.hist.Upgrade = u.run
	w.mu.Unlock()
	return u
}

// host is the process the candidates of slot run on.
func (u *upgrader) host(slot int) *proc {
	return u.w.procs[u.run.Hosts[slot%len(u.run.Hosts)]]
}

// drive runs the upgrade until end: the candidates of the first version,
// then the steps, then closes the candidates left.
func (u *upgrader) drive(end time.Time) {
	defer u.wg.Wait()
	priorities := make([]int, upgradeSlots)
	for i := range priorities {
		priorities[i] = u.rng.IntN(4)
	}
	order := u.rng.Perm(upgradeSlots)
	leaderFirst := u.rng.IntN(2) == 0
	for slot := range upgradeSlots {
		time.Sleep(time.Duration(u.rng.Int64N(int64(200 * time.Millisecond))))
		u.start(slot, 1, priorities[slot])
	}
	interval := func() time.Duration {
		return u.run.bound() + time.Second + time.Duration(u.rng.Int64N(int64(time.Second)))
	}
	time.Sleep(interval())
	if leaderFirst {
		// Operators often upgrade the leader's process first: move its
		// slot to the front.
		if slot, ok := u.leaderSlot(); ok {
			i := slices.Index(order, slot)
			order = append([]int{slot}, append(order[:i:i], order[i+1:]...)...)
		}
	}
	var prev *UpgradeStep
	for _, slot := range order {
		next := interval()
		if !time.Now().Add(next).Before(end) {
			break
		}
		old := u.live[slot]
		s := &UpgradeStep{Slot: slot, Start: time.Now(), Old: old.c}
		if prev != nil {
			prev.End = s.Start
		}
		prev = s
		u.w.mu.Lock()
		u.run.Steps = append(u.run.Steps, s)
		u.w.mu.Unlock()
		if u.run.StopFirst {
			u.close(old)
		}
		n := u.start(slot, old.c.Version+1, old.c.Priority)
		s.New = n.c
		if !u.awaitMember(n.c, end) {
			if !u.run.StopFirst {
				u.close(old)
			}
			break
		}
		if !u.run.StopFirst {
			u.close(old)
		}
		u.w.mu.Lock()
		s.Done = time.Now()
		u.w.mu.Unlock()
		time.Sleep(next)
	}
	if d := time.Until(end); d > 0 {
		time.Sleep(d)
	}
	u.w.mu.Lock()
	u.run.End = time.Now()
	if prev != nil {
		prev.End = u.run.End
	}
	u.w.mu.Unlock()
	for _, r := range u.live {
		u.close(r)
	}
}

// leaderSlot returns the slot of the candidate that leads now, by the
// history (a term begun and not over).
func (u *upgrader) leaderSlot() (int, bool) {
	u.w.mu.Lock()
	defer u.w.mu.Unlock()
	key := storedElection(upgradeElection)
	for _, h := range slices.Backward(u.w.hist.Holds) {
		if h.Key != key || !h.Ended.IsZero() || !h.LostAt.IsZero() {
			continue
		}
		for _, r := range u.live {
			if r.c.ID == h.Who {
				return r.c.Slot, true
			}
		}
	}
	return 0, false
}

// awaitMember waits until the member status shows c live, as the
// operator's tooling reads it (the store itself, whatever the network),
// or the run ends; it reports whether it did.
func (u *upgrader) awaitMember(c *Candidate, end time.Time) bool {
	for time.Now().Before(end) {
		ms, _ := u.w.members.Members(context.Background(), upgradeElection, 3*c.HB)
		if slices.ContainsFunc(ms, func(m leader.Member) bool { return m.ID == c.ID }) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// start starts the candidate of slot at version, with priority.
func (u *upgrader) start(slot, version, priority int) *running {
	w := u.w
	p := u.host(slot)
	// The store's bucket span, if it has one, so that the candidate is
	// not refused (ErrSpan) where processes disagree on it.
	span := p.cfg.Span
	if d, ok, _ := w.mem.Get(context.Background(), driver.ProtocolID); ok && d.Span > 0 {
		span = d.Span
	}
	cl, err := dsync.NewClient(clocked(&procStore{Store: w.mem, p: p, elections: true}, p),
		dsync.ClientWithLogger(discard),
		dsync.ClientWithPollInterval(pollInterval),
		dsync.ClientWithBucketSpan(span),
		dsync.ClientWithTTL(p.cfg.TTL),
		graceOf(w))
	if err != nil {
		panic(err)
	}
	c := &Candidate{Slot: slot, Proc: p.id, Version: version, Priority: priority, HB: clienthook.ClientParams(cl).RenewInterval, Start: time.Now()}
	e, err := leader.NewElection(cl, upgradeElection,
		leader.WithMembers(&upgradeMembers{MemberStore: w.members, p: p, u: u}),
		leader.WithLogger(discard),
		leader.WithVersion(c.version()),
		leader.WithVersionRule(nil),
		leader.WithPriority(priority),
		leader.WithPreemption(u.run.Delay))
	if err != nil {
		panic(err)
	}
	c.ID = e.ID()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, stop: cancel}
	w.mu.Lock()
	u.run.Candidates = append(u.run.Candidates, c)
	u.run.MaxHB = max(u.run.MaxHB, c.HB)
	w.mu.Unlock()
	u.live[slot] = r
	w.tracef("p%d UPGRADE start %v", p.id, c)
	u.wg.Go(func() {
		defer cl.Close()
		defer e.Close()
		for ctx.Err() == nil {
			octx, done := w.op(ctx)
			u.lead(ctx, octx, p, c, e)
			done()
		}
	})
	return r
}

// close begins to close candidate r: its term, if it leads, ends now,
// and its Election closes (its status removed, its lease released).
func (u *upgrader) close(r *running) {
	u.w.mu.Lock()
	r.c.Closed = time.Now()
	u.w.mu.Unlock()
	u.w.tracef("p%d UPGRADE close %v", r.c.Proc, r.c)
	r.stop()
}

// lead campaigns once, within octx, and leads until the term ends: it
// is preempted or lost, or octx ends (the candidate closes, or the
// operator wants the operations under way to end).
func (u *upgrader) lead(ctx, octx context.Context, p *proc, c *Candidate, e *leader.Election) {
	w := u.w
	call := time.Now()
	lctx, err := e.Campaign(octx)
	w.count(outcome("upgrade-campaign", err))
	if err != nil {
		// Campaign returns an error when octx ends, or the store
		// refuses the candidate's bucket span (after an emptying, a
		// process of another span may write the store's): wait a
		// heartbeat rather than spin.
		sleepCtx(ctx, c.HB)
		return
	}
	info, _ := leader.TermOf(lctx)
	lost := make(chan struct{})
	stop := context.AfterFunc(lctx, func() { close(lost) })
	defer stop()
	giveUp := w.holdOf(p, &Hold{Who: c.ID, Prim: PrimElection, Key: storedElection(upgradeElection), Token: info.Token, Call: call}, lost)
	<-lctx.Done()
	if context.Cause(lctx) == leader.ErrPreempted {
		w.count("upgrade-term preempted")
	}
	giveUp()
	rctx, cancel := context.WithTimeout(context.Background(), 2*p.cfg.TTL)
	defer cancel()
	_ = e.Resign(rctx)
}

// holdOf records hold h, on p, that began now, and watches lost for its
// loss until the returned giveUp ends it: the upgrade's candidates, which
// no incarnation owns, use it as it is, and incarnation.hold around its
// own bookkeeping.
func (w *world) holdOf(p *proc, h *Hold, lost <-chan struct{}) (giveUp func()) {
	h.Proc, h.Start = p.id, time.Now()
	w.mu.Lock()
	h.ID = len(w.hist.Holds)
	if c, ok := p.claimAt(claimKey{h.Key, h.Token}, h.Start); ok {
		h.Landed, h.Session = c.at, c.session
	}
	h.KnownSince = p.known[h.Key]
	w.hist.Holds = append(w.hist.Holds, h)
	w.fig.Holds++
	w.mu.Unlock()
	w.tracef("p%d HOLD %v session %s", h.Proc, h, h.Session)
	released := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-lost:
			w.lost(h, time.Now())
		case <-released:
		}
	}()
	return func() {
		p.waitRunning(context.Background()) // a paused process runs no code
		w.end(h, time.Now())
		close(released)
		<-done
	}
}
