package apisim

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// procStore is one process's way to the shared store: a driver.Store
// (with the memory store's feed, peers and revokes, unfaulted) that
// delays, reorders, tears and loses what the process sends, as dsync/driver allows a store and a
// network to, and tells the world's oracle what landed and what was
// confirmed. Sessions are kept by the world (sessions.go), so that the
// operator can empty their collection alone.
type procStore struct {
	*memory.Store
	p *proc
	// elections: the store of the process's elections' Client (the
	// trace tells the two Clients apart).
	elections bool
	// dead, if not nil and set, is a crashed Client's: none of its
	// requests reaches the store any more (a partition member's crash,
	// partition_sim.go).
	dead *atomic.Bool
}

// name is how the trace names the Client whose store s is: "p2" for the
// process's main Client, "p2e" for its elections'.
func (s *procStore) name() string {
	if s.elections {
		return fmt.Sprintf("p%de", s.p.id)
	}
	return fmt.Sprintf("p%d", s.p.id)
}

var (
	_ driver.Store        = (*procStore)(nil)
	_ driver.RunReader    = (*procStore)(nil)
	_ driver.Maintainer   = (*procStore)(nil)
	_ driver.KeyDirectory = (*procStore)(nil)
)

// Roles implements driver.Store: runs, the sweeper's calls, the
// directory and reads of revocations go through the process's network;
// the feed, peers and the other calls of revocations reach the memory
// store directly.
func (s *procStore) Roles() driver.Roles {
	r := s.mem()
	r.Runs, r.Maintenance, r.Directory = s, s, s
	r.Revocations = revocations{r.Revocations, s}
	r.Waits, r.Deadlocks = waitsVia{s}, deadlocksVia{s}
	// The record of up-time is kept with the world's sessions; only an
	// outage run's Clients, which have a grace, use it.
	r.Uptime = nil
	if s.p.w.grace > 0 {
		r.Uptime = s
	}
	return r
}

// mem returns the roles of the memory store, beneath the network.
func (s *procStore) mem() driver.Roles { return s.Store.Roles() }

// revocations is the memory store's, but for Revoked (procStore.Revoked).
type revocations struct {
	driver.RevokeStore
	s *procStore
}

func (r revocations) Revoked(ctx context.Context, session string) (driver.Revocation, bool, error) {
	return r.s.Revoked(ctx, session)
}

// Errors the simulated network gives.
var (
	errUnreachable = errors.New("apisim: store unreachable")
	errReplyLost   = errors.New("apisim: connection reset (the reply was lost)")
)

// plan is what the network does to one request.
type plan struct {
	there, back time.Duration // the request's way to the store, the reply's back
	lost        bool          // the reply never comes: the sender learns of an error
	torn        bool          // applied in parts, others' requests landing between
}

// request sends one request of the process: it waits while the process
// is paused (nothing is sent), fails at once while the store is
// unreachable, and otherwise applies apply at the store after the
// request's way there (which a hang of the store lengthens until the hang
// ends), whatever the sender does meanwhile: a sender whose ctx ends
// first returns, and its request lands later, after its later requests.
// The reply comes back after its own delay, unless lost. done, if not
// nil, runs when the reply reaches the sender (for the oracle). What
// apply writes may be read only when request returns nil: after an
// error, the request may still be landing.
func (s *procStore) request(ctx context.Context, op string, apply func(pl plan), done func(sent time.Time)) error {
	p := s.p
	if err := p.waitRunning(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if s.dead != nil && s.dead.Load() {
		return errUnreachable
	}
	sent := time.Now()
	pl, hang, down := p.w.planRequest(p, op)
	if down {
		p.w.tracef("%s %s: unreachable", s.name(), op)
		return errUnreachable
	}
	applied := make(chan struct{})
	p.w.inflight.Add(1)
	go func() {
		defer p.w.inflight.Done()
		if hang != nil {
			<-hang
		}
		time.Sleep(pl.there)
		apply(pl)
		close(applied)
	}()
	select {
	case <-applied:
	case <-ctx.Done():
		p.w.tracef("%s %s sent %s: given up before it landed", s.name(), op, sent.Format(tf))
		return context.Cause(ctx)
	}
	// The reply's way back waits on a func timer, not a timer channel:
	// a select on a timer channel in a synctest bubble once crashed the
	// race-enabled runtime (SIGSEGV in runtime.(*timer).maybeRunChan, Go
	// 1.26.8, one run of CI's -race pass); a func timer never takes that
	// path.
	back := make(chan struct{})
	t := time.AfterFunc(pl.back, func() { close(back) })
	defer t.Stop()
	select {
	case <-back:
	case <-ctx.Done():
		p.w.tracef("%s %s sent %s: given up before its reply", s.name(), op, sent.Format(tf))
		return context.Cause(ctx)
	}
	// A paused process takes its replies in when it resumes.
	p.waitRunning(context.Background())
	if pl.lost {
		p.w.tracef("%s %s sent %s: reply lost", s.name(), op, sent.Format(tf))
		return errReplyLost
	}
	if done != nil {
		done(sent)
	}
	return nil
}

// Insert implements driver.Store.
func (s *procStore) Insert(ctx context.Context, d driver.Doc) error {
	var err error
	rerr := s.request(ctx, "insert", func(plan) {
		err = s.Store.Insert(context.Background(), d)
		s.p.w.tracef("%s insert %s: %v", s.name(), traceDoc(d), err)
		if err == nil {
			s.p.w.landed(s.p, d)
		}
	}, func(time.Time) {
		if err == nil && d.Kind == driver.KindDone {
			s.p.w.doneReply(s.p, d.Key, d.Token)
		}
	})
	if rerr != nil {
		return rerr
	}
	return err
}

// InsertOrdered implements driver.Store: torn, the documents land one
// after the other with others' requests between them.
func (s *procStore) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	dup := -1
	var landed atomic.Bool
	err := s.request(ctx, "insert-ordered", s.p.w.lateGates(docs, s.p.cfg.Span, landed.Load, s.p.w.stallGates(docs, s.p.cfg.Span, func(pl plan) {
		for i, d := range docs {
			if pl.torn && i > 0 {
				time.Sleep(s.p.w.tearGap())
			}
			if err := s.Store.Insert(context.Background(), d); err != nil {
				s.p.w.tracef("%s insert-ordered %s: %v", s.name(), traceDoc(d), err)
				dup = i
				return
			}
			landed.Store(true)
			s.p.w.tracef("%s insert-ordered %s", s.name(), traceDoc(d))
			s.p.w.landed(s.p, d)
		}
	})), nil)
	if err != nil {
		return 0, err
	}
	return dup, nil
}

// InsertEach implements driver.Store: torn, the documents land in any
// order, apart.
func (s *procStore) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	res := make([]error, len(docs)) // written by the request, which may land after it returned
	var landed atomic.Bool
	err := s.request(ctx, "insert-each", s.p.w.lateGates(docs, s.p.cfg.Span, landed.Load, s.p.w.stallGates(docs, s.p.cfg.Span, func(pl plan) {
		order := s.p.w.perm(len(docs), pl.torn)
		for n, i := range order {
			if pl.torn && n > 0 {
				time.Sleep(s.p.w.tearGap())
			}
			res[i] = s.Store.Insert(context.Background(), docs[i])
			s.p.w.tracef("%s insert-each %s: %v", s.name(), traceDoc(docs[i]), res[i])
			if res[i] == nil {
				landed.Store(true)
				s.p.w.landed(s.p, docs[i])
			}
		}
	})), nil)
	if err == nil {
		return res
	}
	errs := make([]error, len(docs))
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// Get implements driver.Store.
func (s *procStore) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	var d driver.Doc
	var found bool
	err := s.request(ctx, "get", func(plan) {
		d, found, _ = s.Store.Get(context.Background(), id)
		s.p.w.tracef("%s get %s: %v %s", s.name(), id, found, traceDoc(d))
	}, func(time.Time) {
		if found && d.Kind == driver.KindDone {
			s.p.w.doneReply(s.p, d.Key, d.Token)
		}
	})
	if err != nil {
		return driver.Doc{}, false, err
	}
	return d, found, nil
}

// GetRun implements driver.RunReader: the run is read at one instant,
// when the request lands (the queue's simulation reads one a document at
// a time, the weakest order the contract allows).
func (s *procStore) GetRun(ctx context.Context, key string, from, to uint64) ([]driver.Doc, error) {
	var run []driver.Doc
	err := s.request(ctx, "getrun", func(plan) {
		run, _ = s.mem().Runs.GetRun(context.Background(), key, from, to)
		s.p.w.tracef("%s getrun %s %d..%d: %d documents", s.name(), key, from, to, len(run))
	}, nil)
	if err != nil {
		return nil, err
	}
	return run, nil
}

// Delete implements driver.Store: torn, it is applied as a read of the
// documents that exist and a later delete of each.
func (s *procStore) Delete(ctx context.Context, ids []string) error {
	return s.request(ctx, "delete", func(pl plan) {
		s.p.w.tracef("%s delete %v torn %v", s.name(), ids, pl.torn)
		defer s.p.w.deletedDocs(ids)
		if !pl.torn {
			_ = s.Store.Delete(context.Background(), ids)
			return
		}
		var there []string
		for _, id := range ids {
			if _, ok, _ := s.Store.Get(context.Background(), id); ok {
				there = append(there, id)
			}
		}
		for _, id := range there {
			time.Sleep(s.p.w.tearGap())
			s.Store.DeleteNow(id)
		}
	}, nil)
}

// RecentKeys implements driver.Maintainer.
func (s *procStore) RecentKeys(ctx context.Context, from int64) ([]string, error) {
	var keys []string
	if err := s.request(ctx, "recent-keys", func(plan) { keys, _ = s.mem().Maintenance.RecentKeys(context.Background(), from) }, nil); err != nil {
		return nil, err
	}
	return keys, nil
}

// Compact implements driver.Maintainer (applied whole: the contract lets a
// store tear it only with care for done records, which the memory store
// takes).
func (s *procStore) Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error) {
	var n int64
	if err := s.request(ctx, "compact", func(plan) {
		n, _ = s.mem().Maintenance.Compact(context.Background(), sentBefore, keep)
		s.p.w.tracef("%s compact sent before %s keep %v: %d", s.name(), sentBefore.Format(tf), keep, n)
		s.p.w.compacted(n)
	}, nil); err != nil {
		return 0, err
	}
	return n, nil
}

// DropGates implements driver.Maintainer.
func (s *procStore) DropGates(ctx context.Context, below int64, sentBefore time.Time) error {
	return s.request(ctx, "drop-gates", func(plan) {
		_ = s.mem().Maintenance.DropGates(context.Background(), below, sentBefore)
		s.p.w.tracef("%s drop-gates below %d", s.name(), below)
	}, nil)
}

// PutKeys implements driver.KeyDirectory.
func (s *procStore) PutKeys(ctx context.Context, keys []string) error {
	return s.request(ctx, "put-keys", func(plan) { _ = s.mem().Directory.PutKeys(context.Background(), keys) }, nil)
}

// HasKey implements driver.KeyDirectory.
func (s *procStore) HasKey(ctx context.Context, key string) (bool, error) {
	var ok bool
	if err := s.request(ctx, "has-key", func(plan) { ok, _ = s.mem().Directory.HasKey(context.Background(), key) }, nil); err != nil {
		return false, err
	}
	return ok, nil
}

// ListKeys implements driver.KeyDirectory (unfaulted: only listings read it,
// and the simulation lists nothing).
func (s *procStore) ListKeys(ctx context.Context, q driver.KeyQuery) iter.Seq2[string, error] {
	return s.mem().Directory.ListKeys(ctx, q)
}

// KeyOrder implements driver.KeyDirectory.
func (s *procStore) KeyOrder() driver.KeyOrder { return s.mem().Directory.KeyOrder() }

// isWrite reports whether op changes the store (the ops a held-back
// request matters for).
func isWrite(op string) bool {
	return strings.HasPrefix(op, "insert") || strings.HasPrefix(op, "renew") || op == "delete" || op == "compact" || op == "drop-gates" || op == "put-keys"
}
