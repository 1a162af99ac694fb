package apisim

import (
	"errors"
	"fmt"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader/operator"
	"log/slog"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/lockset"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/statuspage"
)

// This file is the only one that knows how a process makes its Client,
// its primitives and its election on its store: when the public API's
// constructors change, this file changes, and no other.

var discard = slog.New(slog.DiscardHandler)

// pollInterval is how often a waiter polls when it has no wake-up: the
// in-memory test clients'.
const pollInterval = 100 * time.Millisecond

// parts is one incarnation of a process: its Client and what it makes
// primitives with.
type parts struct {
	client *dsync.Client
	// elections is the Client of the process's elections: the same view
	// of the store and clock, without an idle age.
	elections *dsync.Client
	members   leader.MemberStore
	cfg       procConfig
}

// build makes a Client for p over its faulty view of the shared store.
func build(p *proc) (*parts, error) {
	copts := []dsync.ClientOption{
		dsync.ClientWithLogger(loggerOf(p, fmt.Sprintf("p%d", p.id))),
		dsync.ClientWithPollInterval(pollInterval),
		dsync.ClientWithBucketSpan(p.cfg.Span),
		dsync.ClientWithTTL(p.cfg.TTL),
		graceOf(p.w),
	}
	if p.cfg.Idle > 0 {
		copts = append(copts, dsync.ClientWithIdleAge(p.cfg.Idle))
	}
	if p.w.sets {
		// A lock set's member lost while the set waits is left to run
		// out, and the set starts again: the oracle must know that
		// claim is no longer the set's (set_claims.go).
		copts = append(copts, dsync.ClientWithObserver(event.Observer{Lost: func(h event.Held, _ error) { p.w.memberLost(p, h) }}))
	}
	c, err := dsync.NewClient(clocked(&procStore{Store: p.w.mem, p: p}, p), copts...)
	if err != nil {
		return nil, err
	}
	ec, err := dsync.NewClient(clocked(&procStore{Store: p.w.mem, p: p, elections: true}, p),
		append(copts, dsync.ClientWithIdleAge(0), dsync.ClientWithLogger(loggerOf(p, fmt.Sprintf("p%de", p.id))))...)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &parts{client: c, elections: ec, members: p.w.members, cfg: p.cfg}, nil
}

// graceOf is the outage grace of every Client of w (0: none, as by
// default): a Client without it, whose sessions keep no record of
// up-time, keeps every other from taking back a hold after an outage.
func graceOf(w *world) dsync.ClientOption { return dsync.ClientWithOutageGrace(w.grace) }

func (ps *parts) mutex(key string) (*dsync.Mutex, error) {
	return dsync.NewMutex(ps.client, key)
}

// rwmutex makes an RWMutex; linger turns its read linger on, for the
// renew interval (it is off by default).
func (ps *parts) rwmutex(key string, linger bool) (*dsync.RWMutex, error) {
	if linger {
		return dsync.NewRWMutex(ps.client, key, dsync.WithReadLinger(clienthook.ClientParams(ps.client).RenewInterval))
	}
	return dsync.NewRWMutex(ps.client, key)
}

func (ps *parts) semaphore(key string) (*dsync.Semaphore, error) {
	return dsync.NewSemaphore(ps.client, key, ps.cfg.Limit)
}

// progressMutex, progressRWMutex and progressSemaphore make values whose
// holds have a progress deadline of d (WithProgressDeadline).
func (ps *parts) progressMutex(key string, d time.Duration) (*dsync.Mutex, error) {
	return dsync.NewMutex(ps.client, key, dsync.WithProgressDeadline(d))
}

func (ps *parts) progressRWMutex(key string, d time.Duration) (*dsync.RWMutex, error) {
	return dsync.NewRWMutex(ps.client, key, dsync.WithProgressDeadline(d))
}

func (ps *parts) progressSemaphore(key string, d time.Duration) (*dsync.Semaphore, error) {
	return dsync.NewSemaphore(ps.client, key, ps.cfg.Limit, dsync.WithProgressDeadline(d))
}

// lockSet makes a lock set of Mutexes of keys, given in that order,
// detecting deadlocks after d (0: off), and returns its members.
func (ps *parts) lockSet(keys []string, d time.Duration) (*lockset.Set, []*dsync.Mutex, error) {
	ms, members, err := ps.setMembers(keys)
	if err != nil {
		return nil, nil, err
	}
	s, err := lockset.New(ps.client, members, lockset.WithDeadlockTimeout(d))
	return s, ms, err
}

// setMembers makes Mutexes of keys and their members of a lock set.
func (ps *parts) setMembers(keys []string) ([]*dsync.Mutex, []lockset.Member, error) {
	var ms []*dsync.Mutex
	var members []lockset.Member
	for _, k := range keys {
		m, err := dsync.NewMutex(ps.client, k)
		if err != nil {
			return nil, nil, err
		}
		ms, members = append(ms, m), append(members, lockset.Mutex(m))
	}
	return ms, members, nil
}

func (ps *parts) once(key string) (*dsync.Once, error) {
	return dsync.NewOnce(ps.client, key)
}

// election makes a candidate. Its lease runs on the process's clock, so
// a pause stops its requests and its timers: a leader paused at its
// deadline learns of its loss when it resumes (the documented limit of a
// paused process), and the checker ends its term at the deadline
// (Hold.End).
// A progress deadline of d is set on its terms unless d is 0.
func (ps *parts) election(name string, d time.Duration) (*leader.Election, error) {
	return leader.NewElection(ps.elections, name, leader.WithMembers(ps.members), leader.WithLogger(discard), leader.WithProgressDeadline(d))
}

// watcher makes an Election that only watches who leads (it never
// campaigns), on the Client of the process's elections, polling every
// poll.
func (ps *parts) watcher(name string, poll time.Duration) (*leader.Election, error) {
	return leader.NewElection(ps.elections, name, leader.WithMembers(ps.members), leader.WithLogger(discard), leader.WithPollInterval(poll))
}

// statusReader reads the store as dsync status does, through the
// process's main Client.
func (ps *parts) statusReader() *statuspage.Reader {
	r := statuspage.NewReader(ps.client)
	r.Members = ps.members
	return r
}

// close closes the Clients (holds are lost, then released).
func (ps *parts) close() error { return errors.Join(ps.client.Close(), ps.elections.Close()) }

// newMembers is the member status all processes' elections share; it
// has nothing to close.
func newMembers() (*leadertest.MemoryMembers, func()) {
	return leadertest.NewMemoryMembers(), func() {}
}

// Stored keys: how the primitives name their keys in the store.
func storedRW(key string) string   { return statuspage.NamespacedKey("rw", key) }
func storedSem(key string) string  { return statuspage.NamespacedKey("sem", key) }
func storedOnce(key string) string { return statuspage.NamespacedKey("once", key) }
func storedElection(name string) string {
	return operator.LockKey(name)
}
