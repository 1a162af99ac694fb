package statuspage

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// A Sink takes the locks and the elections as Walk and WalkNamed read
// them.
type Sink interface {
	Lock(LockState) error
	Election(ElectionState) error
}

// A Selection is what Walk reads: the keys that begin with Prefix, after
// the key After in the store's order, at most Limit of them (0: all).
type Selection struct {
	Prefix, After string
	Limit         int
}

// Listed is what a read found, besides what it handed out.
type Listed struct {
	Order KeyOrder // the order of the store's list
	// Locks and Elections count those handed out.
	Locks, Elections int
	// More: the Limit ended the list before its end. Next is the After
	// that reads the rest, where the order allows one (OrderBytes).
	More bool
	Next string
}

// A LockState is a Mutex, RWMutex, Semaphore or Once as read: its key as
// stored, the kind and name of the primitive that claims it (KindOf),
// and its queue as the library reads it.
type LockState struct {
	Key        string
	Kind, Name string
	// Holders are the claims that hold, or are about to, in queue order:
	// one, or several readers (an RWMutex's) or units (a Semaphore's);
	// Waiting the claims queued behind them. Both are empty when nothing
	// holds or waits.
	Holders, Waiting []ClaimInfo
	// Expired are the claims whose session had expired as read
	// (ClaimInfo.Expired): they hold no more, and the next process
	// that claims or waits on the key ends them (reading does not).
	Expired []ClaimInfo
	// Done: a Once whose function ran to success (its done record
	// exists), which nothing holds or waits for.
	Done bool
	Now  time.Time // Reader.Now when read
}

// State is what the lock is in: held (by a Mutex, a writer or a Once's
// run), read (by readers), units held/limit (a Semaphore's), done (a
// Once that ran to success), or free.
func (l LockState) State() string {
	switch {
	case len(l.Holders) == 0 && l.Done:
		return "done"
	case len(l.Holders) == 0:
		return "free"
	}
	switch h := l.Holders[0]; h.Mode {
	case ModeShared:
		return "read"
	case ModeWeighted:
		return fmt.Sprintf("%d/%d", l.Units(), h.Limit)
	}
	return "held"
}

// Units is the weight the holders hold (a Semaphore's units).
func (l LockState) Units() int64 {
	var n int64
	for _, h := range l.Holders {
		n += h.Weight
	}
	return n
}

// Walk hands out to out the locks and the elections of the keys sel
// selects, as List lists them: each as soon as it is read, in the
// store's order. An error of out ends the walk and is returned as it is.
func (r *Reader) Walk(ctx context.Context, sel Selection, out Sink) (Listed, error) {
	sum, err := r.begin(ctx)
	if err != nil {
		return sum, err
	}
	if sel.After != "" && sum.Order != OrderBytes {
		return sum, ErrAfterUnsupported
	}
	opts := ListOptions{Prefix: sel.Prefix, After: sel.After}
	if sel.Limit > 0 {
		opts.Limit = sel.Limit + 1 // one more, to tell whether more follow
	}
	listed, last := 0, ""
	for ks, err := range r.List(ctx, opts) {
		if err != nil {
			return sum, err
		}
		if sel.Limit > 0 && listed == sel.Limit {
			sum.More = true
			if sum.Order == OrderBytes {
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
	order, err := r.ListOrder(ctx)
	return Listed{Order: order}, err
}

// key hands out the lock or the election of key, whose queue is q, and
// counts it in sum.
func (r *Reader) key(ctx context.Context, key string, q []ClaimInfo, out Sink, sum *Listed) error {
	kind, name := KindOf(key)
	if kind == KindElection {
		e, err := r.election(ctx, name)
		if err != nil {
			return err
		}
		sum.Elections++
		return out.Election(e)
	}
	l := LockState{Key: key, Kind: kind, Name: name}
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
		once, err := dsync.NewOnce(r.client, name)
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
