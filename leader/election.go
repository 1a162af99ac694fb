package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

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
	// kept: the last term was lost to an outage of the store and its
	// lock is kept for the next campaign to take back (term_resume.go).
	kept bool
	// releasing, while Resign releases a kept lock, is closed once it is
	// released (resignKept); nil otherwise.
	releasing  chan struct{}
	closed     bool
	background bool          // heartbeat (and new-leader watch) running
	stop       chan struct{} // closed by Close to stop the background
	wg         sync.WaitGroup
	kick       chan struct{} // asks for a heartbeat now
	kickSoon   chan struct{} // asks for one after statusAfterTerm
	// What this candidate advertises (proclaim.go): the term it last led,
	// its value in that term and the number of proclamations in it.
	procTerm   uint64
	proclaimed string
	rev        uint64

	// putMu orders the member writes: each is composed and sent under it,
	// so that a write composed later is sent later (and carries a later
	// sequence in the member store).
	putMu sync.Mutex

	xfer     handoff // Transfer's (transfer.go)
	steering steerer // the steering options' (steer.go)

	// events calls the observer (observer.go); nil without one.
	events *observe.Queue
}

// NewElection returns a candidate for election name on c.
//
// Its leadership lease is a lock of c's in the namespace operator.Namespace. So it
// shares c's lease (its TTL and renew interval, dsync.ClientWithTTL) with every
// lock of the process. Its member status goes to the MemberStore given
// with WithMembers, if any. It does no I/O.
func NewElection(c *dsync.Client, name string, opts ...Option) (*Election, error) {
	if c == nil {
		return nil, errors.New("leader: nil client")
	}
	if name == "" {
		return nil, errors.New("leader: empty election name")
	}
	cfg, err := newConfig(forElection, opts, c)
	if err != nil {
		return nil, err
	}
	// The leases live in a namespace of dsync's own, which
	// dsync.WithNamespace refuses to users' Mutexes.
	mopts := []dsync.Option{clienthook.Elections.(dsync.Option), clienthook.KeyLogger.(func(*slog.Logger) dsync.Option)(cfg.logger)}
	if cfg.progress > 0 {
		mopts = append(mopts, dsync.WithProgressDeadline(cfg.progress))
	}
	mu, err := dsync.NewMutex(c, name, mopts...)
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	host, _ := os.Hostname()
	e := &Election{
		name:     name,
		client:   c,
		cfg:      cfg,
		mu:       mu,
		self:     Member{ID: clienthook.OwnerOf(mu), Host: host, PID: os.Getpid(), Version: cfg.version, Value: cfg.value, Priority: cfg.steer.priority},
		stop:     make(chan struct{}),
		kick:     make(chan struct{}, 1),
		kickSoon: make(chan struct{}, 1),
	}
	e.xfer.e, e.xfer.turn = e, make(chan struct{}, 1)
	e.steering.e = e
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

// Campaign blocks until this candidate leads, and returns a leadership
// context.
//
// The context lives exactly as long as the leadership. It is cancelled
// with one of these causes:
//   - ErrLeadershipLost, the moment the lease can no longer be guaranteed
//     (at its local deadline, even with the store unreachable);
//   - ErrResigned, after Resign or Close;
//   - ErrTransferred, after Transfer;
//   - ErrPreempted, when it gives way to a better candidate
//     (WithPreemption, WithVersionRule);
//   - the parent's cause, when ctx ends.
//
// Leadership is then given up. On Resign or when ctx ends, the lease is
// released at once, so stop leader-only work first (Run does this for
// you). A lost lease is left to run out. Run leader-only work under the
// context.
//
// With an outage grace (dsync.ClientWithOutageGrace), a term whose lease
// is lost in an outage of the store ends as above, with a cause that
// wraps ErrLeadershipLost and dsync.ErrSuspended, and its lease is kept
// rather than left to run out. Campaign called again takes it back: it
// waits (bounded by ctx) for the store's verdict on the outage, and if
// the outage did not end the term, it returns at once a new context of
// the same term, with the same token; nobody else led in between. If the
// outage ended it, Campaign returns an error wrapping ErrLeadershipLost
// and dsync.ErrLost that says so, and the next Campaign campaigns anew. A
// kept lease that no Campaign takes back within a TTL of the store's
// return is released then, and at Resign or Close. Run takes terms back
// the same way. Stop the ended term's work before calling Campaign
// again: the term taken back has the same token, which does not fence
// that work's late writes.
//
// If ctx ends before this candidate is elected, Campaign returns
// context.Cause(ctx) and holds nothing. Store errors do not end it: it
// logs them (WithLogger) and tries again. When the server cannot be
// reached, its first warning comes when a Lock's would, within the
// TTL less its margin (TTL/20), not at the database driver's own
// timeout, and says what the driver said of the server.
func (e *Election) Campaign(ctx context.Context) (context.Context, error) {
	e.mustBeMade()
	t, err := e.campaign(ctx, false)
	if err != nil {
		return nil, err
	}
	return t.ctx, nil
}

// Resign gives up leadership now, so another candidate need not wait for
// the TTL.
//
// The leadership context is cancelled with cause ErrResigned, and the lease
// is released at once — so stop leader-only work before resigning — or,
// under Run, as soon as fn has returned. Resign releases it itself, within
// ctx, as Unlock does a Mutex's; it returns once the lease is released or
// ctx ends (a release that ctx cut short is sent again in the background).
// It does nothing when this candidate does not lead, but release a lease
// kept after an outage (see Campaign), unless a Campaign is under way.
func (e *Election) Resign(ctx context.Context) error {
	e.mustBeMade()
	e.state.Lock()
	t := e.term
	e.state.Unlock()
	if t == nil {
		return e.resignKept(ctx)
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
		// The term may have been lost to an outage of the store as
		// Resign came: then its watch kept the lock (keep) for the next
		// campaign to take back, and Resign gives that up too.
		return e.resignKept(ctx)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// IsLeader reports whether this candidate leads now, as far as it knows
// locally. That is, its leadership context has not been cancelled.
func (e *Election) IsLeader() bool {
	e.mustBeMade()
	e.state.Lock()
	defer e.state.Unlock()
	return e.term != nil && e.term.ctx.Err() == nil
}

// Leader returns who leads now, or an error wrapping ErrNoLeader.
//
// The leader is the holder of the election's lease: the first claim that
// holds in the queue of the election's key (operator.LockKey). With WithMembers, the
// Info adds what the leader's member status advertises (Version, Value
// and Rev). If that status is of a later term
// than the claim read, Leader reads who leads again, twice at most.
//
// It only reads, by a clock that may be off the one the candidates'
// writes are judged by. Before its Client's first claim, that clock is
// MongoDB hello's (behind a mongos, the router's). Leader may then name
// nobody while a candidate leads. It may also name the next candidate
// while the leader's lease has not expired (see statuspage.ClaimInfo.Expired).
func (e *Election) Leader(ctx context.Context) (Info, error) {
	e.mustBeMade()
	return e.readLeader(ctx)
}

// Members returns the candidates whose heartbeat is recent.
//
// Recent is within three heartbeat intervals, in the member store's time.
// Without a member store (WithMembers) it returns ErrNoMembers.
func (e *Election) Members(ctx context.Context) ([]Member, error) {
	e.mustBeMade()
	if e.cfg.members == nil {
		return nil, ErrNoMembers
	}
	return e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
}

// Run campaigns, and runs fn under the leadership context, again after
// every loss.
//
// When that leadership is lost, Run waits for fn to return and campaigns
// again. It returns when ctx ends (with its cause). It returns fn's error
// when fn returns one of its own while still leading, and nil when fn
// returns nil while still leading. Leadership is given up whenever fn
// returns.
//
// fn must return soon after its context is cancelled. Several leader-only
// jobs can share one leadership through errgroup.WithContext.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	e.mustBeMade()
	for {
		t, err := e.campaign(ctx, true)
		var ended *termEndedError
		switch {
		case errors.As(err, &ended) && ctx.Err() == nil:
			continue // a term the outage ended: campaign anew
		case err != nil:
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

// Close resigns if this candidate leads, releases a lease kept after an
// outage (see Campaign), and ends the Election.
//
// It stops its heartbeat and removes its member document. The Election
// cannot be used afterwards.
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
	e.releaseKept()
	close(e.stop)
	e.wg.Wait()
	e.events.Close()
	if !started || e.cfg.members == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clienthook.ClientParams(e.client).TTL)
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

// keepingHook, if set (by tests only), is called by a term's watch once it
// has taken the term lost to an outage to keep its lock, before it does.
var keepingHook func()
