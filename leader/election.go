package leader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/observe"
)

// An Election is one candidate for the leadership of a named election.
// Create it with NewElection; Close it when done. Its methods are safe for
// concurrent use. Its zero value is not usable: each of its methods
// panics, as misuse of a sync type does.
type Election struct {
	name   string
	client *dsync.Client
	cfg    config
	mu     *dsync.Mutex
	self   Member // ID, Host, PID, Version

	state        sync.Mutex
	campaigning  bool
	stopCampaign context.CancelCauseFunc // ends a Campaign under way
	term         *term                   // the current leadership; nil when not leading
	closed       bool
	background   bool          // heartbeat (and new-leader watch) running
	stop         chan struct{} // closed by Close to stop the background
	wg           sync.WaitGroup
	kick         chan struct{} // asks for a heartbeat now
	kickSoon     chan struct{} // asks for one after statusAfterTerm
	// What this candidate advertises (proclaim.go): the term it last led,
	// its value in that term and the number of proclamations in it.
	procTerm   uint64
	proclaimed string
	rev        uint64

	// putMu orders the member writes: each is composed and sent under it,
	// so that a write composed later is sent later (and carries a later
	// sequence in the member store).
	putMu sync.Mutex

	// events calls the observer (observer.go); nil without one.
	events *observe.Queue
}

// term is one leadership of this candidate.
type term struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once the lock is given up
	token  uint64        // the term's fencing token
	// fnDone, for a term run by Run, is closed when fn has returned: the
	// lock is released only then, so the next leader never overlaps it.
	fnDone chan struct{}
	// givingUp is set by whoever gives the lock up (giveUp): Resign, in
	// its caller's goroutine, or the term's watch. The other waits for
	// done, Resign only as long as its context lives.
	givingUp atomic.Bool
}

// NewElection returns a candidate for election name on c: its leadership
// lease is a lock of c's in the namespace Namespace, so it shares c's
// lease (its TTL and renew interval, dsync.WithTTL) with every lock of
// the process. Its member status goes to the MemberStore given with
// WithMembers, if any. It does no I/O.
func NewElection(c *dsync.Client, name string, opts ...Option) (*Election, error) {
	if c == nil {
		return nil, errors.New("leader: nil client")
	}
	if name == "" {
		return nil, errors.New("leader: empty election name")
	}
	cfg, err := newConfig(opts, c)
	if err != nil {
		return nil, err
	}
	// The leases live in a namespace of dsync's own, which
	// dsync.WithNamespace refuses to users' Mutexes.
	mu, err := dsync.NewMutex(c, name, clienthook.Elections.(dsync.MutexOption), dsync.WithLogger(cfg.logger))
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	host, _ := os.Hostname()
	e := &Election{
		name:     name,
		client:   c,
		cfg:      cfg,
		mu:       mu,
		self:     Member{ID: mu.Owner(), Host: host, PID: os.Getpid(), Version: cfg.version, Value: cfg.value},
		stop:     make(chan struct{}),
		kick:     make(chan struct{}, 1),
		kickSoon: make(chan struct{}, 1),
	}
	e.newEvents()
	return e, nil
}

// Name returns the election's name.
func (e *Election) Name() string {
	e.mustBeMade()
	return e.name
}

// ID returns this candidate's identity, as Info.ID and Member.ID report it.
func (e *Election) ID() string {
	e.mustBeMade()
	return e.self.ID
}

// Campaign blocks until this candidate leads, and returns a context that
// lives exactly as long as the leadership. The context is cancelled with
// cause ErrLeadershipLost the moment the lease can no longer be
// guaranteed (at its local deadline, even with the store unreachable),
// ErrResigned after Resign or Close, or the parent's cause when ctx ends.
// Leadership is then given up: on Resign or when ctx ends the lease is
// released at once, so stop leader-only work first (Run does this for
// you); a lost lease is left to run out. Run leader-only work under it.
//
// If ctx ends before this candidate is elected, Campaign returns
// context.Cause(ctx) and holds nothing.
func (e *Election) Campaign(ctx context.Context) (context.Context, error) {
	e.mustBeMade()
	t, err := e.campaign(ctx, false)
	if err != nil {
		return nil, err
	}
	return t.ctx, nil
}

func (e *Election) campaign(ctx context.Context, managed bool) (*term, error) {
	cctx, stop, first, err := e.beginCampaign(ctx)
	if err != nil {
		return nil, err
	}
	if first && e.cfg.members != nil {
		// Report this member before it can lead, so that whoever sees it
		// lead can also read its status (version).
		e.putMember(cctx)
	}

	err = e.preflight(cctx)
	if err == nil {
		err = e.mu.LockContext(cctx)
	}
	stop(nil)

	e.state.Lock()
	e.campaigning = false
	e.stopCampaign = nil
	if err != nil {
		e.state.Unlock()
		return nil, err
	}
	if e.closed {
		// Close ran while this candidate was being elected.
		e.state.Unlock()
		e.unlockQuietly(context.Background())
		return nil, ErrClosed
	}
	t, info := e.beginTermLocked(ctx, managed)
	e.state.Unlock()

	e.heartbeatNow()
	e.observe(Transition{Election: e.name, Leading: true, Term: info.Token})
	if e.cfg.onElected != nil {
		e.cfg.onElected(info)
	}
	return t, nil
}

// beginCampaign marks this candidate as campaigning, once the previous
// term (if it is over) has given its lock up, and starts the background
// (first: for the first time). It returns the campaign's context, which
// Close cancels, or why this candidate may not campaign.
func (e *Election) beginCampaign(ctx context.Context) (cctx context.Context, stop context.CancelCauseFunc, first bool, err error) {
	e.state.Lock()
	if t := e.term; t != nil && t.ctx.Err() != nil && !e.campaigning {
		// The previous term is over and is giving its lock up: wait for
		// that rather than report this candidate as still leading.
		e.state.Unlock()
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, nil, false, context.Cause(ctx)
		}
		e.state.Lock()
	}
	defer e.state.Unlock()
	switch {
	case e.closed:
		return nil, nil, false, ErrClosed
	case e.campaigning || e.term != nil:
		return nil, nil, false, ErrCampaigning
	}
	e.campaigning = true
	cctx, stop = context.WithCancelCause(ctx)
	e.stopCampaign = stop
	first = !e.background
	e.startBackground()
	return cctx, stop, first, nil
}

// beginTermLocked starts the term this candidate was just elected to,
// under ctx (the campaign's parent), and its watch; e.state is held.
func (e *Election) beginTermLocked(ctx context.Context, managed bool) (*term, Info) {
	e.procTerm, e.proclaimed, e.rev = e.mu.Token(), e.cfg.value, 0
	ref := &termRef{e: e, token: e.procTerm}
	lctx, cancel := context.WithCancelCause(context.WithValue(ctx, termKey{}, ref))
	info := e.selfInfoLocked()
	t := &term{ctx: lctx, cancel: cancel, done: make(chan struct{}), token: info.Token}
	if managed {
		t.fnDone = make(chan struct{})
	}
	e.term = t
	e.wg.Add(1)
	go e.watch(t, plantedLost(e.mu.Lost()))
	return t, info
}

// watch ends term t when its lease is lost or its context ends, and gives
// the lock up. A lost lease is left to run out: the margin between the
// local deadline and its expiry in the store is what lets the work under
// the cancelled context stop before another leader starts. Otherwise the
// lease is released — at once for Campaign, so other candidates need not
// wait for the TTL, and after fn returns for Run.
func (e *Election) watch(t *term, lost <-chan struct{}) {
	defer e.wg.Done()
	select {
	case <-lost:
		t.cancel(ErrLeadershipLost)
	case <-t.ctx.Done():
		if t.fnDone != nil {
			<-t.fnDone
		}
	}
	e.giveUp(context.Background(), t)
	<-t.done
	e.heartbeatSoon()
	if e.cfg.onLost != nil {
		e.cfg.onLost(context.Cause(t.ctx))
	}
}

// giveUp gives term t's lock up, once t's context is cancelled: whoever
// wins t.givingUp, Resign or the term's watch, releases it (or leaves a
// lost lease to run out) within ctx and the TTL, and closes t.done. For
// the other, it returns at once: it waits for t.done as it can (a Resign
// whose context ends returns then, without waiting for the release).
// Resign takes t.givingUp before it cancels t, so the watch that the
// cancel wakes never sends a release that Resign means to send.
func (e *Election) giveUp(ctx context.Context, t *term) {
	if t.givingUp.CompareAndSwap(false, true) {
		e.release(ctx, t)
	}
}

// release gives term t's lock up for whoever won t.givingUp, and closes
// t.done.
func (e *Election) release(ctx context.Context, t *term) {
	e.observe(Transition{Election: e.name, Term: t.token, Cause: context.Cause(t.ctx)})
	e.unlockQuietly(ctx)
	e.state.Lock()
	e.term = nil
	e.state.Unlock()
	close(t.done)
}

// unlockQuietly releases the lock within ctx and the TTL, and logs a
// failure, unless ctx ended: a release cut short goes on in the
// Client's background (dsync's resender).
func (e *Election) unlockQuietly(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, e.client.TTL())
	defer cancel()
	if err := e.mu.UnlockContext(ctx); err != nil && !errors.Is(err, dsync.ErrLost) && ctx.Err() == nil {
		e.cfg.logger.Warn("leader: give up leadership", "election", e.name, "err", err)
	}
}

// Resign gives leadership up now, so another candidate can take over
// without waiting for the TTL. The leadership context is cancelled with
// cause ErrResigned, and the lease is released at once — so stop
// leader-only work before resigning — or, under Run, as soon as fn has
// returned. Resign releases it itself, within ctx, as Unlock does a
// Mutex's; it returns once the lease is released or ctx ends (a release
// that ctx cut short is sent again in the background). It does nothing
// when this candidate does not lead.
func (e *Election) Resign(ctx context.Context) error {
	e.mustBeMade()
	e.state.Lock()
	t := e.term
	e.state.Unlock()
	if t == nil {
		return nil
	}
	// Released here rather than by the term's watch, which would first
	// have to be woken: the next leader's wait is this release's latency,
	// as after a Mutex's Unlock. The release is taken before the term is
	// cancelled, since the cancel wakes the watch, which would otherwise
	// take it when it runs first.
	mine := t.fnDone == nil && ctx.Err() == nil && t.givingUp.CompareAndSwap(false, true)
	t.cancel(ErrResigned)
	if resignedHook != nil {
		resignedHook()
	}
	if mine {
		e.release(ctx, t)
	}
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// IsLeader reports whether this candidate leads now, as far as it knows
// locally: its leadership context has not been cancelled.
func (e *Election) IsLeader() bool {
	e.mustBeMade()
	e.state.Lock()
	defer e.state.Unlock()
	return e.term != nil && e.term.ctx.Err() == nil
}

// Leader returns who leads now, or an error wrapping ErrNoLeader (see
// who.go). It only reads, by a clock that may be off the one the
// candidates' writes are judged by (before its Client's first claim,
// on MongoDB hello's: behind a mongos, the router's): it may
// then name nobody while a candidate leads, or the next candidate while
// the leader's lease has not expired (see dsync.ClaimInfo.Expired).
func (e *Election) Leader(ctx context.Context) (Info, error) {
	e.mustBeMade()
	return e.readLeader(ctx)
}

// Members returns the candidates whose heartbeat is recent: within three
// heartbeat intervals, in the member store's time. Without a member store
// (WithMembers) it returns ErrNoMembers.
func (e *Election) Members(ctx context.Context) ([]Member, error) {
	e.mustBeMade()
	if e.cfg.members == nil {
		return nil, ErrNoMembers
	}
	return e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
}

// Run campaigns, runs fn under the leadership context, and when that
// leadership is lost waits for fn to return and campaigns again. It returns
// when ctx ends (with its cause), when fn returns an error of its own while
// still leading (that error), or when fn returns nil while still leading
// (nil). Leadership is given up whenever fn returns.
//
// fn must return soon after its context is cancelled. Several leader-only
// jobs can share one leadership through errgroup.WithContext.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	e.mustBeMade()
	for {
		t, err := e.campaign(ctx, true)
		if err != nil {
			return err
		}
		ferr := fn(t.ctx)
		cause := context.Cause(t.ctx) // nil when fn returned on its own
		t.cancel(ErrResigned)
		close(t.fnDone)
		<-t.done
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case cause != nil:
			continue // lost or resigned: campaign again
		default:
			return ferr
		}
	}
}

// Close resigns if this candidate leads, stops its heartbeat and removes its
// member document. The Election cannot be used afterwards.
func (e *Election) Close() error {
	e.mustBeMade()
	e.state.Lock()
	if e.closed {
		e.state.Unlock()
		return nil
	}
	e.closed = true
	t := e.term
	started := e.background
	if e.stopCampaign != nil {
		e.stopCampaign(ErrClosed)
	}
	e.state.Unlock()

	if t != nil {
		t.cancel(ErrResigned)
		<-t.done
	}
	close(e.stop)
	e.wg.Wait()
	e.events.Close()
	if !started || e.cfg.members == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.client.TTL())
	defer cancel()
	if err := e.cfg.members.DeleteMember(ctx, e.name, e.self.ID); err != nil {
		return fmt.Errorf("leader: remove member status: %w", err)
	}
	return nil
}

// selfInfoLocked describes this candidate as leader. Since is left zero:
// it is the store's time, which Leader and Observe report. e.state is
// held.
func (e *Election) selfInfoLocked() Info {
	return Info{ID: e.self.ID, Host: e.self.Host, PID: e.self.PID, Version: e.self.Version, Token: e.procTerm,
		Value: e.proclaimed, Rev: e.rev}
}

// resignedHook, if set (by tests only), is called by Resign once it has
// cancelled the term, before it releases the lease: the term's watch,
// woken by that cancel, may run meanwhile.
var resignedHook func()
