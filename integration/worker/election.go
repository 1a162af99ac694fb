package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
	"github.com/go-dsync/dsync/leader/operator"
)

// runElection campaigns in a loop (see elect; runSteered if the election
// is steered). With Observe it also records every leader Observe
// reports, and what a direct Leader poll says every poll interval.
func (w *worker) runElection(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	locks, store, err := w.client(db)
	if err != nil {
		return err
	}
	defer locks.Close()
	members, err := leadermongo.NewStore(store)
	if err != nil {
		return err
	}

	var elected atomic.Pointer[leader.Info]
	opts := []leader.Option{
		leader.WithMembers(members),
		leader.WithLogger(w.logger),
		leader.WithPollInterval(max(cfg.Poll, 50*time.Millisecond)),
		leader.OnElected(func(info leader.Info) { elected.Store(&info) }),
	}
	opts = append(opts, cfg.steering()...)
	e, err := leader.NewElection(locks, cfg.Key, opts...)
	if err != nil {
		return err
	}
	defer e.Close()

	var wg sync.WaitGroup
	octx, stopObserving := context.WithCancel(context.Background())
	defer func() { stopObserving(); wg.Wait() }()
	if cfg.Observe {
		w.observe(octx, &wg, e, operator.LockKey(cfg.Key))
	}
	if cfg.steered() {
		w.announceMember(octx, &wg, e)
		return w.runSteered(ctx, e)
	}
	return w.elect(ctx, e, &elected)
}

// elect campaigns with e in a loop until ctx ends (or for Config.Holds
// terms). Each term is a hold of operator.LockKey(name): the worker records
// it like a Mutex hold, with the deadline its recorder predicts (an
// Election does not expose its lease's deadline), and does its register
// increment under the term's token. elected is what e's OnElected was
// last told.
//
// The terms live under a context of their own, not ctx: a term's lease is
// released the moment the context it was campaigned under ends, whatever
// the worker is doing under it, and a term begun under ctx would be over
// for the library, and the next leader elected, while the worker, told to
// stop, still finished its register write and recorded the term's end
// after. ctx's end stops only a campaign under way; the term the worker
// is in when ctx ends is ended as every other one: recorded ended, then
// resigned.
func (w *worker) elect(ctx context.Context, e *leader.Election, elected *atomic.Pointer[leader.Info]) error {
	cfg := &w.cfg
	key := operator.LockKey(cfg.Key)
	terms, endTerms := context.WithCancel(context.Background())
	defer endTerms()
	var retake uint64 // the token of a term lost to a suspension (Config.Relock)
	for n := 0; cfg.Holds == 0 || n < cfg.Holds; n++ {
		stopCampaign := context.AfterFunc(ctx, endTerms)
		called := history.Now()
		lctx, err := e.Campaign(terms)
		if !stopCampaign() {
			// ctx ended during the campaign: terms is cancelled, or is
			// about to be, and with it a term Campaign may have begun
			// meanwhile, whose lease is then released at once. The worker
			// never relies on such a term, nor records it.
			return nil
		}
		if retake != 0 {
			w.recordRetake(key, retake, called, lctx, err)
			if retake = 0; errors.Is(err, leader.ErrLeadershipLost) {
				continue // the outage ended the term: campaign anew
			}
		}
		if err != nil {
			return err
		}
		info := elected.Load()
		if term, ok := leader.TermOf(lctx); !ok || term.Token != info.Token {
			return fmt.Errorf("TermOf of the leadership context: %+v, %v; OnElected said token %d", term, ok, info.Token)
		}
		h, deadline, stopWatch := w.beginTerm(lctx, e.ID(), key, info.Token)

		w.proclaim(ctx, lctx, e, key, h.token)
		w.criticalSection(ctx, h)

		h.end(deadline, history.SrcPred)
		if cfg.Relock && errors.Is(context.Cause(lctx), dsync.ErrSuspended) {
			// Lost to a suspension: no Resign, which would release the
			// lock the term kept; the next Campaign takes it back.
			stopWatch()
			w.rec.forget(key, h.token)
			retake = h.token
			continue
		}
		rctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
		err = e.Resign(rctx)
		cancel()
		stopWatch()
		w.emit(history.Event{Ev: history.EvReleased, Key: key, Token: h.token, Err: errString(err)})
		w.rec.forget(key, h.token)
		if !sleepCtx(ctx, cfg.Gap) {
			return nil
		}
	}
	return nil
}

// recordRetake records a campaign called at called to take back the
// term of token, lost to a suspension: lctx and err are what Campaign
// returned.
func (w *worker) recordRetake(key string, token uint64, called int64, lctx context.Context, err error) {
	ev := history.Event{Ev: history.EvRelock, Key: key, Token: token, T: called, End: history.Now(), Err: errString(err)}
	if err == nil {
		if term, ok := leader.TermOf(lctx); ok {
			ev.Value = int64(term.Token)
		}
	}
	w.emit(ev)
}

// observe records, until octx ends, every leader Observe reports and what
// a direct Leader poll says every poll interval, in two goroutines
// counted in wg.
func (w *worker) observe(octx context.Context, wg *sync.WaitGroup, e *leader.Election, key string) {
	cfg := &w.cfg
	wg.Add(2)
	go func() {
		defer wg.Done()
		for info := range e.Observe(octx) {
			w.emit(history.Event{Ev: history.EvObserve, Key: key, Token: info.Token, Owner: info.ID, Adv: info.Value, Rev: info.Rev})
		}
	}()
	go func() {
		defer wg.Done()
		for sleepCtx(octx, cfg.Poll) {
			pctx, cancel := context.WithTimeout(octx, cfg.TTL)
			sent := history.Now()
			info, err := e.Leader(pctx)
			cancel()
			if err == nil {
				w.emit(history.Event{Ev: history.EvPoll, Key: key, Token: info.Token, Owner: info.ID, Adv: info.Value, Rev: info.Rev, T: sent})
			}
		}
	}()
}

// proclaim has the leader of term token advertise two values in turn, and
// records each one confirmed with the revision it got, for the check that
// observers see a term's values in order, each as proclaimed.
func (w *worker) proclaim(ctx, lctx context.Context, e *leader.Election, key string, token uint64) {
	for i := 1; i <= 2; i++ {
		value := fmt.Sprintf("%s/%d/%d", w.cfg.Name, token, i)
		pctx, cancel := context.WithTimeout(ctx, w.cfg.TTL)
		err := e.Proclaim(pctx, value)
		cancel()
		if err != nil {
			return // not confirmed: observers may or may not see it
		}
		if term, ok := leader.TermOf(lctx); ok && term.Token == token && term.Value == value {
			w.emit(history.Event{Ev: history.EvProclaim, Key: key, Token: token, Adv: value, Rev: term.Rev})
		}
	}
}

// beginTerm records the start of a leadership term (an election's, or a
// Partition shard's) of token on key as a hold, and watches tctx for its
// loss (leader.ErrLeadershipLost) against the hold's deadline; stopWatch
// ends the watch.
func (w *worker) beginTerm(tctx context.Context, owner, key string, token uint64) (h *hold, deadline func() int64, stopWatch func()) {
	cfg := &w.cfg
	h = &hold{w: w, key: key, token: token, lostNow: func() bool {
		return errors.Is(context.Cause(tctx), leader.ErrLeadershipLost)
	}}
	w.rec.holding(key, h.token, history.Now())
	deadline = func() int64 { return w.rec.deadline(key, h.token) }
	w.emit(history.Event{Ev: history.EvAcquire, Owner: owner, Key: key, Token: h.token,
		DL: deadline(), Src: history.SrcPred, TTL: int64(cfg.TTL), Margin: int64(cfg.TTL / 20),
		Version: cfg.Version, Priority: cfg.Priority})
	lost := make(chan struct{})
	go func() {
		<-tctx.Done()
		if errors.Is(context.Cause(tctx), leader.ErrLeadershipLost) {
			close(lost)
		}
	}()
	return h, deadline, h.watch(lost, deadline, history.SrcPred)
}
