package lockset

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// A Member is one lock of a Set: a Mutex (Mutex), or the read or the
// write side of an RWMutex (Read, Write).
type Member struct {
	m    setcore.Member
	kind string // for errors: "Mutex", "Read", "Write"
}

// Mutex is the member that locks m. It panics, as m's methods do, if m
// was not made by dsync.NewMutex.
func Mutex(m *dsync.Mutex) Member { return Member{setcore.Mutex(m), "Mutex"} }

// Read is the member that locks rw for reading. It panics, as rw's
// methods do, if rw was not made by dsync.NewRWMutex.
func Read(rw *dsync.RWMutex) Member { return Member{setcore.Read(rw), "Read"} }

// Write is the member that locks rw for writing. It panics, as rw's
// methods do, if rw was not made by dsync.NewRWMutex.
func Write(rw *dsync.RWMutex) Member { return Member{setcore.Write(rw), "Write"} }

// An Option configures a Set.
type Option func(*config) error

type config struct {
	deadlock time.Duration // WithDeadlockTimeout; 0: off
}

// Errors of New. Match them with errors.Is; New's errors name the
// members concerned.
var (
	// ErrNoMembers: New was given no member.
	ErrNoMembers = errors.New("lockset: no members")
	// ErrTwice: two members lock the same stored key (the same
	// primitive twice, or two values of one key and kind).
	ErrTwice = errors.New("lockset: a key named twice")
	// ErrOtherClient: a member's primitive belongs to another Client.
	ErrOtherClient = errors.New("lockset: a member of another Client")
)

// A Set is several locks held all or nothing: Lock returns holding every
// member, each with its own fencing token, and Unlock releases them all.
// It behaves as a sync.Mutex over the whole: one Lock at a time holds it,
// and any goroutine may Unlock it. A Set must not be copied; its zero
// value is not usable (New).
type Set struct {
	self    *Set // copy check
	client  *dsync.Client
	cfg     config
	members []Member // in the set's order: by stored key
	given   []int    // given[i] is the place in members of the i-th member given

	sem chan struct{} // the Set's own lock within the process

	mu   sync.Mutex
	held *holding // the current holding; nil when not held
	last *holding // the last installed, current or not (Err)
}

// New returns a Set of members on c. It refuses a nil Client
// (dsync.ErrNilClient), no members (ErrNoMembers), a member of another
// Client (ErrOtherClient) and two members of one stored key (ErrTwice):
// the same RWMutex's Read and Write, or two Mutex values of one key, would
// wait for each other within the set.
func New(c *dsync.Client, members []Member, opts ...Option) (*Set, error) {
	if c == nil {
		return nil, dsync.ErrNilClient
	}
	var cfg config
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if len(members) == 0 {
		return nil, ErrNoMembers
	}
	if err := cfg.check(c, members); err != nil {
		return nil, err
	}
	sorted, given, err := order(members)
	if err != nil {
		return nil, err
	}
	s := &Set{client: c, cfg: cfg, members: sorted, given: given, sem: make(chan struct{}, 1)}
	s.self = s
	return s, nil
}

// order returns members in the set's order (takingOrder), and given:
// given[i] is the place there of members[i]. It refuses two members of
// one stored key (ErrTwice).
func order(members []Member) (sorted []Member, given []int, err error) {
	if err := noneTwice(members); err != nil {
		return nil, nil, err
	}
	sorted, given = make([]Member, len(members)), make([]int, len(members))
	for at, i := range takingOrder(members) {
		sorted[at], given[i] = members[i], at
	}
	return sorted, given, nil
}

// byStored returns the places of members sorted by their stored keys:
// the global order (doc.go, "The order").
func byStored(members []Member) []int {
	idx := make([]int, len(members))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(members[a].m.Stored(), members[b].m.Stored()) })
	return idx
}

// noneTwice refuses two members of one stored key (ErrTwice), naming
// the first two.
func noneTwice(members []Member) error {
	idx := byStored(members)
	for at := 1; at < len(idx); at++ {
		i, j := idx[at-1], idx[at]
		if members[i].m.Stored() == members[j].m.Stored() {
			return fmt.Errorf("%w: %q (members %d and %d)", ErrTwice, members[j].m.Key(), min(i, j), max(i, j))
		}
	}
	return nil
}

// check refuses members of a Client other than c, and, with deadlock
// detection on, of a TTL (the Client's) shorter than its timeout. It
// panics for a zero Member.
func (cfg *config) check(c *dsync.Client, members []Member) error {
	for i, m := range members {
		if m.m == nil {
			panic(fmt.Sprintf("lockset: member %d is a zero Member (use Mutex, Read or Write)", i))
		}
		if m.m.Client() != any(c) {
			return fmt.Errorf("%w: member %d (%s %q)", ErrOtherClient, i, m.kind, m.m.Key())
		}
		if cfg.deadlock > m.m.TTL() {
			return fmt.Errorf("%w: %v is longer than the TTL %v of member %d (%s %q)", ErrDeadlockTimeout,
				cfg.deadlock, m.m.TTL(), i, m.kind, m.m.Key())
		}
	}
	return nil
}

// mustBeUsable panics for a zero or copied Set, as sync's types do.
func (s *Set) mustBeUsable() {
	switch {
	case s == nil || s.sem == nil:
		panic("lockset: Set used without New")
	case s.self != s:
		panic("lockset: Set copied")
	}
}

// Lost returns a channel closed when a member of the current holding is
// lost (its lease ran out or was revoked, or it stalled: see
// dsync.Mutex.Lost); Err then says which. Unlock does not close it. When
// s is not held, Lost returns a closed channel: nothing is protected.
func (s *Set) Lost() <-chan struct{} {
	s.mustBeUsable()
	s.mu.Lock()
	h := s.held
	s.mu.Unlock()
	if h == nil {
		return closedChan
	}
	return h.lostChan()
}

// Err returns why the current holding (or, once unlocked, the last) was
// lost, naming the first member lost; nil if none was. The error wraps
// the member's, which wraps dsync.ErrLost.
func (s *Set) Err() error {
	s.mustBeUsable()
	s.mu.Lock()
	h, held := s.last, s.held != nil
	s.mu.Unlock()
	if h == nil {
		return nil
	}
	if held {
		h.lostChan() // a deadline passed unseen is looked at first
	}
	return h.err()
}

// Tokens returns the members' fencing tokens, in the order New was given
// the members; nil when s is not held. Each is its key's own token, as
// the member's Token returns it.
func (s *Set) Tokens() []uint64 {
	s.mustBeUsable()
	s.mu.Lock()
	h := s.held
	s.mu.Unlock()
	if h == nil {
		return nil
	}
	_, given, holds := h.view()
	out := make([]uint64, len(given))
	for i, at := range given {
		out[i] = holds[at].Token()
	}
	return out
}

// ValidUntil returns the earliest of the members' local deadlines, on
// time.Now's scale (see dsync.Mutex.ValidUntil); the zero Time when s is
// not held.
func (s *Set) ValidUntil() time.Time {
	s.mustBeUsable()
	s.mu.Lock()
	h := s.held
	s.mu.Unlock()
	var t time.Time
	if h == nil {
		return t
	}
	_, _, holds := h.view()
	for _, m := range holds {
		if u := m.ValidUntil(); t.IsZero() || u.Before(t) {
			t = u
		}
	}
	return t
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
