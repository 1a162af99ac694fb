package statuspage

import (
	"context"
	"iter"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader"
)

// A Reader reads one store's locks and elections for people. It only
// reads (see the package doc): the page and dsync status read through
// one, and a program may too.
type Reader struct {
	client *dsync.Client
	// Members gives the elections' members (leadermongo.Store on
	// MongoDB); nil: elections are read without members (and
	// leader.Election.Leader reports no Version or Value).
	Members leader.MemberStore
	// Seen: the members whose last heartbeat is at most this old are
	// read. NewReader sets dsync.DefaultTTL.
	Seen time.Duration
	// Now is the time each LockState and ElectionState carries: the
	// store's, when the caller has it. NewReader sets time.Now.
	Now func() time.Time
	// MaxKeyLen, if positive, is the longest key the store holds:
	// WalkNamed passes over the longer keys a name would give, which no
	// primitive can have.
	MaxKeyLen int
}

// NewReader returns a Reader of c's store, with no member store. Set its
// fields before its first read.
func NewReader(c *dsync.Client) *Reader {
	return &Reader{client: c, Seen: dsync.DefaultTTL, Now: time.Now}
}

// reads are the Client's reads, which dsync gives this package.
func reads() clienthook.Reads[*dsync.Client, driver.Revocation, driver.Stall] {
	return clienthook.ClientReads.(clienthook.Reads[*dsync.Client, driver.Revocation, driver.Stall])
}

// Queue returns the claims of key (as stored) that have not ended, in
// the order they hold. Those marked Holds hold, or are about to: they
// may not know yet, and may still withdraw. The first live claim is
// always marked Holds. Those marked Expired no longer hold but have not
// been ended yet (see ClaimInfo.Expired). The others wait. It returns
// none when nothing holds or waits for key.
func (r *Reader) Queue(ctx context.Context, key string) ([]ClaimInfo, error) {
	q, err := reads().Queue(r.client, ctx, key)
	return claimsOfRead(q), err
}

// List streams the keys of the store that opts selects, each with its
// queue, in the store's order (ListOrder), each once.
//
// The keys are those claimed through a Client: a Client records a key
// in the store's directory, in the background, the first time it claims
// it (and again at a claim an hour or more later). A key stays listed
// when nothing holds or waits for it any more (its Queue is empty); only
// an operator removes it. A key claimed while a listing runs may be
// listed or not.
//
// List reads the keys from the store a batch at a time as the caller
// goes on (on MongoDB a range of the directory's index; on FerretDB, in
// order of first use, a prefix costs a read of the keys the server
// passes until a batch is full), and each key's queue as Queue does, a
// few keys ahead of the caller (their reads overlap). Stopping the loop
// stops the reads, and List returns once they have. An error ends the
// listing; it comes with the key it concerns, if any.
func (r *Reader) List(ctx context.Context, opts ListOptions) iter.Seq2[KeyState, error] {
	return func(yield func(KeyState, error) bool) {
		kq := clienthook.KeyQuery{Prefix: opts.Prefix, After: opts.After, Limit: opts.Limit}
		for ks, err := range reads().List(r.client, ctx, kq) {
			if !yield(KeyState{Key: ks.Key, Queue: claimsOfRead(ks.Queue)}, err) {
				return
			}
		}
	}
}

// HasKey reports whether List lists key: whether a Client has recorded it
// (see List). It reads one entry of the store's directory, whatever its
// queue.
func (r *Reader) HasKey(ctx context.Context, key string) (bool, error) {
	return reads().HasKey(r.client, ctx, key)
}

// ListOrder returns the order in which List lists the store's keys.
func (r *Reader) ListOrder(ctx context.Context) (KeyOrder, error) {
	o, err := reads().ListOrder(r.client, ctx)
	return KeyOrder(o), err
}

// Revocations returns the revocations recorded in the store (dsync
// revoke): who revoked which session, when (store time) and why. It
// returns none on a store that records none.
func (r *Reader) Revocations(ctx context.Context) ([]Revocation, error) {
	stored, err := reads().Revocations(r.client, ctx)
	if err != nil || stored == nil {
		return nil, err
	}
	out := make([]Revocation, len(stored))
	for i, rv := range stored {
		out[i] = Revocation{Session: rv.Session, By: rv.By, Reason: rv.Reason, At: rv.At}
	}
	return out, nil
}

// Stalls returns the stall records kept in the store: which holds
// stalled, whose and when, each with its primitive's kind and name
// (KindOf). It returns none on a store that records none. A store may
// delete a record once it is old (dsyncmongo keeps one for a day).
func (r *Reader) Stalls(ctx context.Context) ([]Stall, error) {
	stored, err := reads().Stalls(r.client, ctx)
	if err != nil || stored == nil {
		return nil, err
	}
	out := make([]Stall, len(stored))
	for i, st := range stored {
		kind, name := KindOf(st.Key)
		out[i] = Stall{Key: st.Key, Kind: kind, Name: name, Token: st.Token, Owner: st.Owner, Host: st.Host, PID: st.PID,
			Session: st.Session, Nonce: st.Nonce, Since: st.Since, LastProgress: st.LastProgress, At: st.At}
	}
	return out, nil
}
