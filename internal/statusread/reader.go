package statusread

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// A Reader reads the locks and the elections of one store.
type Reader struct {
	// Client reads the keys and their queues. Required.
	Client *dsync.Client
	// Members gives the elections' members; nil: elections are read
	// without members (and Leader reports no Version or Value).
	Members leader.MemberStore
	// Seen: the members whose last heartbeat is at most this old are
	// read.
	Seen time.Duration
	// Now is the time each Lock and Election carries: the store's, when
	// the caller has it. Required.
	Now func() time.Time
	// MaxKeyLen, if positive, is the longest key the store holds: Named
	// passes over the longer keys a name would give, which no primitive
	// can have.
	MaxKeyLen int
}

// A Sink takes the locks and the elections as they are read.
type Sink interface {
	Lock(Lock) error
	Election(Election) error
}

// A Selection is what List reads: the keys that begin with Prefix, after
// the key After in the store's order, at most Limit of them (0: all).
type Selection struct {
	Prefix, After string
	Limit         int
}

// Listed is what a read found, besides what it handed out.
type Listed struct {
	Order dsync.KeyOrder // the order of the store's list
	// Locks and Elections count those handed out.
	Locks, Elections int
	// More: the Limit ended the list before its end. Next is the After
	// that reads the rest, where the order allows one (dsync.OrderBytes).
	More bool
	Next string
}

// A Lock is a Mutex, RWMutex, Semaphore or Once as read: its key as
// stored, the kind and name of the primitive that claims it (KindOf),
// and its queue as the library reads it.
type Lock struct {
	Key        string
	Kind, Name string
	// Holders are the claims that hold, or are about to, in queue order:
	// one, or several readers (an RWMutex's) or units (a Semaphore's);
	// Waiting the claims queued behind them. Both are empty when nothing
	// holds or waits.
	Holders, Waiting []dsync.ClaimInfo
	// Expired are the claims whose session had expired as read
	// (dsync.ClaimInfo.Expired): they hold no more, and the next process
	// that claims or waits on the key ends them (reading does not).
	Expired []dsync.ClaimInfo
	// Done: a Once whose function ran to success (its done record
	// exists), which nothing holds or waits for.
	Done bool
	Now  time.Time // Reader.Now when read
}

// State is what the lock is in: held (by a Mutex, a writer or a Once's
// run), read (by readers), units held/limit (a Semaphore's), done (a
// Once that ran to success), or free.
func (l Lock) State() string {
	switch {
	case len(l.Holders) == 0 && l.Done:
		return "done"
	case len(l.Holders) == 0:
		return "free"
	}
	switch h := l.Holders[0]; h.Mode {
	case dsync.ModeShared:
		return "read"
	case dsync.ModeWeighted:
		return fmt.Sprintf("%d/%d", l.Units(), h.Limit)
	}
	return "held"
}

// Units is the weight the holders hold (a Semaphore's units).
func (l Lock) Units() int64 {
	var n int64
	for _, h := range l.Holders {
		n += h.Weight
	}
	return n
}

// List hands out the locks and the elections of the keys sel selects, as
// the library lists them.
func (r *Reader) List(ctx context.Context, sel Selection, out Sink) (Listed, error) {
	sum, err := r.begin(ctx)
	if err != nil {
		return sum, err
	}
	if sel.After != "" && sum.Order != dsync.OrderBytes {
		return sum, dsync.ErrAfterUnsupported
	}
	opts := dsync.ListOptions{Prefix: sel.Prefix, After: sel.After}
	if sel.Limit > 0 {
		opts.Limit = sel.Limit + 1 // one more, to tell whether more follow
	}
	listed, last := 0, ""
	for ks, err := range r.Client.List(ctx, opts) {
		if err != nil {
			return sum, err
		}
		if sel.Limit > 0 && listed == sel.Limit {
			sum.More = true
			if sum.Order == dsync.OrderBytes {
				sum.Next = last
			}
			return sum, nil
		}
		listed, last = listed+1, ks.Key
		if err := r.key(ctx, ks.Key, ks.Queue, out, &sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// begin begins a read's Listed with the order of the store's list.
func (r *Reader) begin(ctx context.Context) (Listed, error) {
	order, err := r.Client.ListOrder(ctx)
	return Listed{Order: order}, err
}

// key hands out the lock or the election of key, whose queue is q, and
// counts it in sum.
func (r *Reader) key(ctx context.Context, key string, q []dsync.ClaimInfo, out Sink, sum *Listed) error {
	kind, name := KindOf(key)
	if kind == KindElection {
		e, err := r.election(ctx, name)
		if err != nil {
			return err
		}
		sum.Elections++
		return out.Election(e)
	}
	l := Lock{Key: key, Kind: kind, Name: name}
	for _, c := range q {
		switch {
		case c.Expired:
			l.Expired = append(l.Expired, c)
		case c.Holds:
			l.Holders = append(l.Holders, c)
		default:
			l.Waiting = append(l.Waiting, c)
		}
	}
	if kind == KindOnce && len(l.Holders) == 0 && len(l.Waiting) == 0 {
		// Nothing holds or waits: the Once is done, or its runs failed
		// (or none ran to the end).
		once, err := dsync.NewOnce(r.Client, name)
		if err != nil {
			return err
		}
		if l.Done, err = once.Done(ctx); err != nil {
			return err
		}
	}
	l.Now = r.Now()
	sum.Locks++
	return out.Lock(l)
}

// Revocations returns the sessions operators revoked, as the store
// records them (dsync.Client.Revocations).
func (r *Reader) Revocations(ctx context.Context) ([]dsync.Revocation, error) {
	return r.Client.Revocations(ctx)
}

// Stalls returns the holds that stalled, as the store records them
// (dsync.Client.Stalls).
func (r *Reader) Stalls(ctx context.Context) ([]dsync.Stall, error) {
	return r.Client.Stalls(ctx)
}
