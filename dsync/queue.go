package dsync

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/readahead"
)

// What a Client reads for people: the keys of its store (its directory,
// kept by internal/keydir), and each key's queue.

// ClaimInfo describes a claim of a key's queue that has not ended.
type ClaimInfo struct {
	Key     string // the key as stored: a namespaced key begins with "dsync:"
	Token   uint64 // the claim's epoch: its fencing token once it holds
	Owner   string // the Mutex (or candidate) that claimed
	Session string
	Nonce   string
	Host    string // the claiming process
	PID     int
	// QueuedAt is the latest possible store time when the claim was sent.
	// ExpiresAt is its session's expiry as read (store time), unless
	// renewed.
	QueuedAt  time.Time
	ExpiresAt time.Time
	// Mode is how the claim shares its key. Exclusive is a Mutex's or a
	// writer's, shared a reader's, weighted a Semaphore's. Weight and Limit
	// are a weighted claim's units and limit.
	Mode   Mode
	Weight int64
	Limit  int64
	// Holds: the claim holds by the grant rule, or is about to. The rule is
	// applied given the live claims before it: readers share, weighted
	// claims up to their limit. The others wait.
	Holds bool
	// Expired: the claim's session had expired (ExpiresAt) by the store's
	// time as the read knew it. So the claim no longer holds, and the next
	// process that claims or waits on the key ends it. Until then it stays
	// in the queue, neither holding nor waiting, and the claims behind it
	// hold or wait as if it had ended. A read never ends it itself: its
	// clock may be off the one that orders the writes (behind a mongos,
	// before this Client's first claim, it is the router's), so Expired is
	// a report, off by as much. It follows the rule claimers end claims by:
	// a session found missing, or expired without its first document (its
	// collection may have been dropped, and a late write brought back an
	// old expiry while its owner holds on), is not Expired, whatever
	// ExpiresAt says: a claimer ends its claim only once it stayed missing
	// for the claim's TTL, which one read cannot see. Once a read of a
	// Client that has claimed (whose clock is then the one the writes are
	// judged by) found a claim Expired, its later reads report it Expired
	// too, for two of the claim's TTLs past the expiry found (the highest
	// ExpiresAt of the reads that reported it Expired, whichever of its
	// session's keys they read: further than a renewal sent in time can
	// raise it; up to 4,096 sessions remembered), even if a renewal its
	// owner sent before losing it lands late and raises the session's
	// stored expiry: the owner stopped relying on it, and the next claimer
	// ends it (a reader that never saw it expired, or read by another
	// clock, reads it live until that raised expiry, or until it is ended).
	Expired bool
}

// Queue returns the claims of key that have not ended, in the order they
// hold. Those marked Holds hold, or are about to: they may not know yet,
// and may still withdraw. The first live claim is always marked Holds.
// Those marked Expired no longer hold but have not been ended yet (see
// ClaimInfo.Expired). The others wait. It returns none when nothing holds
// or waits for key.
//
// Queue, List, HasKey and ListOrder only read: they create nothing in
// the store (on MongoDB no collection or index, see
// driver.Roles.Reads), write nothing (not even the end of a claim whose
// session expired) and need only a database user's read role. On a
// store nothing has used they find nothing there. Until the Client's
// first claim, they learn the store's bucket span from its protocol
// document, and on MongoDB sample the server's clock with hello.
func (c *Client) Queue(ctx context.Context, key string) ([]ClaimInfo, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	if err := c.prepareRead(ctx); err != nil {
		return nil, err
	}
	return c.readQueue(ctx, key)
}

// readQueue is Queue for a Client prepared for reading (prepareRead):
// List prepares once for all its keys.
func (c *Client) readQueue(ctx context.Context, key string) ([]ClaimInfo, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	docs, err := c.eng.QueueRead(ctx, key, c.readNow)
	if err != nil {
		return nil, err
	}
	// The store's time before the sessions are read, as the engine judges
	// (unended): a session read later can only have been renewed since.
	// Taken once it is known whether it is the clock of the writes.
	remember := c.readsByWriteClock()
	earliest := c.readNow().Earliest
	q := make([]ClaimInfo, len(docs))
	expired := make([]bool, len(docs))
	for i, d := range docs {
		q[i] = ClaimInfo{Key: key, Token: d.Epoch, Owner: d.Owner, Session: d.Session, Nonce: d.Nonce,
			Host: d.Host, PID: d.PID, QueuedAt: d.Sent, ExpiresAt: d.Exp, Mode: modeOf(d.Mode), Weight: d.Weight, Limit: d.Limit}
		s, found, err := c.store.GetSession(ctx, d.Session)
		if err != nil {
			return nil, err
		}
		if found && s.ExpiresAt.After(q[i].ExpiresAt) {
			q[i].ExpiresAt = s.ExpiresAt
		}
		expired[i] = c.eng.ReadExpired(d, s, found, earliest, remember)
	}
	markHolds(q, docs, expired)
	return q, nil
}

// markHolds sets Expired on the claims of q (read as docs) that expired
// (queue.Engine.ReadExpired, the rule the engine ends claims with), and
// Holds by the grant rule among the others: the next process that claims
// or waits on the key ends an expired claim (its owner stopped relying on
// it at its local deadline, earlier still), and the claims behind it go
// on as if it had ended.
func markHolds(q []ClaimInfo, docs []queue.Doc, expired []bool) {
	var live []queue.Doc
	var at []int
	for i := range q {
		q[i].Expired = expired[i]
		if !q[i].Expired {
			live, at = append(live, docs[i]), append(at, i)
		}
	}
	for j, h := range queue.Holding(live) {
		q[at[j]].Holds = h
	}
}

// ListOptions selects the keys List lists.
type ListOptions struct {
	// Prefix: only keys that begin with it; "" lists every key.
	Prefix string
	// After: only keys after it in the store's order, which must be
	// OrderBytes; "" starts at the first key. Passing the last key of a
	// page gives the next page.
	After string
	// Limit: at most this many keys; 0 lists them all. It must not be
	// negative.
	Limit int
}

// KeyState is a key of the store and its queue, as List reads them.
type KeyState struct {
	// Key is the key as stored: a namespaced key, such as an election's
	// lease, begins with "dsync:".
	Key string
	// Queue is what Queue returns for Key: the claims that have not ended.
	// The one that holds (or is about to) comes first. It is empty when
	// nothing holds or waits for the key: the key was used, and is free.
	Queue []ClaimInfo
}

// List streams the keys of the store that opts selects, each with its
// queue. It streams them in the store's order (ListOrder), each once.
//
// The keys are those claimed through a Client of this release or a later
// one: a Client records a key in the store's directory, in the
// background, the first time it claims it (and again at a claim an hour
// or more later), so a key claimed only before this release is listed
// once it is claimed again. A key stays listed
// when nothing holds or waits for it any more (its Queue is empty); only
// an operator removes it. A key claimed while a listing runs may be
// listed or not.
//
// List reads the keys from the store a batch at a time as the caller
// goes on (see the driver: on MongoDB a range of the directory's index;
// on FerretDB, in order of first use, a prefix costs a read of the keys
// the server passes until a batch is full), and each key's queue as
// Queue does, a few keys ahead of the caller (their reads overlap).
// Stopping the loop stops the reads, and List returns once they have. An error ends the listing; it comes with the key it concerns, if
// any. It only reads, and creates nothing (see Queue).
func (c *Client) List(ctx context.Context, opts ListOptions) iter.Seq2[KeyState, error] {
	return func(yield func(KeyState, error) bool) {
		if opts.Limit < 0 {
			yield(KeyState{}, fmt.Errorf("dsync: limit must not be negative, got %d", opts.Limit))
			return
		}
		dir, err := c.directory()
		if err != nil {
			yield(KeyState{}, err)
			return
		}
		if err := c.prepareRead(ctx); err != nil {
			yield(KeyState{}, err)
			return
		}
		keys := func(ctx context.Context) iter.Seq2[string, error] {
			return dir.ListKeys(ctx, driver.KeyQuery{Prefix: opts.Prefix, After: opts.After, Limit: opts.Limit})
		}
		listErr := func(err error) error { return fmt.Errorf("dsync: list keys: %w", err) }
		for it, err := range readahead.Seq(ctx, listAhead, keys, c.readQueue, listErr) {
			if !yield(KeyState{Key: it.Key, Queue: it.Val}, err) || err != nil {
				return
			}
		}
	}
}

// listAhead is how many keys' queues List reads at once, at most: the one
// its caller waits for and those after it. Each queue is a few point reads, one after another; reading
// the queues of a page's keys side by side makes a page cost about the
// round trips of a few keys, not of all of them.
const listAhead = 8

// HasKey reports whether List lists key: whether a Client has recorded it
// (see List). It reads one entry of the store's directory, whatever its
// queue, and creates nothing (see Queue).
func (c *Client) HasKey(ctx context.Context, key string) (bool, error) {
	if err := c.checkKey(key); err != nil {
		return false, err
	}
	dir, err := c.directory()
	if err != nil {
		return false, err
	}
	if err := c.prepareStoreRead(ctx); err != nil {
		return false, err
	}
	return dir.HasKey(ctx, key)
}

// ListOrder returns the order in which List lists the store's keys. It
// creates nothing (see Queue).
func (c *Client) ListOrder(ctx context.Context) (KeyOrder, error) {
	dir, err := c.directory()
	if err != nil {
		return 0, err
	}
	if err := c.prepareStoreRead(ctx); err != nil {
		return 0, err
	}
	return orderOf(dir.KeyOrder()), nil
}

// directory returns the store's directory of keys, or an error wrapping
// errors.ErrUnsupported if it keeps none (driver.Roles.Directory).
func (c *Client) directory() (driver.KeyDirectory, error) {
	if c.roles.Directory == nil {
		return nil, fmt.Errorf("dsync: the store keeps no directory of keys: %w", errors.ErrUnsupported)
	}
	return c.roles.Directory, nil
}
