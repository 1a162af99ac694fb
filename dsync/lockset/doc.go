// Package lockset holds several dsync locks all or nothing: a Set of
// members (a Mutex, or the read or the write side of an RWMutex), each
// with its own fencing token, that never deadlocks with another Set or a
// single locker, whatever order their callers name the keys in (unless
// a caller waits while it holds a key outside its Set: see Guarantees).
// Do not use it where one key would do: a contended Set waits for its
// members one after another.
//
//	a, _ := dsync.NewMutex(client, "acct/7")
//	b, _ := dsync.NewMutex(client, "acct/9")
//	set, err := lockset.New(client, []lockset.Member{lockset.Mutex(a), lockset.Mutex(b)})
//	...
//	set.Lock()
//	defer set.Unlock()
//	move(set.Tokens()) // each key's own token, in the order given
//
// A Set reads as a sync.Mutex over its members, with dsync's Context
// forms: one Lock of it at a time, in a process; any goroutine may Unlock
// it.
//
// # The order
//
// Every Set takes its members in one global order: by the bytes of their
// stored keys, which is the key as given for a Mutex without namespace,
// "dsync:NS/KEY" for one in namespace NS (dsync.WithNamespace), and
// "dsync:rw/KEY" for either side of an RWMutex. The order is part of the
// protocol: Sets of every process of a store must agree on it, so it never
// changes. New sorts the members into it, and refuses two members of one
// stored key (the same RWMutex's Read and Write, or two values of one key).
//
// # The protocol
//
//  1. Fast path. Take the members' local turns (a Mutex's, or an
//     RWMutex's writers', lock within the process) in the order while they
//     are free, and try every member so turned at once, as TryLockContext
//     tries: a try never queues, so it overtakes no one. If all hold, the
//     Set holds.
//  2. Ordered wait. Let i be the first member not held. Release the held
//     members after i (the caller never saw them), keep those before it,
//     and wait for member i, then i+1, and so on, each as its
//     LockContext waits: first for its local turn, then in its key's
//     queue. So a Set waits at a key only while it holds members before
//     that key, and nothing after it.
//  3. Return once every member is held and none is lost. A member lost
//     first makes the Set release every member and start again at 1.
//     The members' progress deadlines (dsync.WithProgressDeadline) start
//     at the return.
//  4. When ctx ends first, the waiting member withdraws its claim, as its
//     LockContext would, the held members are released, and LockContext
//     returns context.Cause(ctx). A withdrawal or release the store does
//     not confirm in time is sent again in the background by the Client,
//     as for any unlock, and the claim ends with its session at the
//     latest.
//
// TryLockContext is step 1 alone: on a busy member it releases the rest
// and returns that member's error. Unlock releases the members at once.
//
// # Guarantees
//
// Exclusion and tokens. A member's hold is an ordinary claim of its own
// key, made and ended by the member's primitive as its own Lock would, and
// installed there (the member's Token, Lost and Err see it). No claim of
// a new kind and no change to the queue's rules: the store's proof that
// at most one claim holds a key (dsync/internal/queue's "Why at most one
// claim holds"), that a token exceeds every earlier hold's of its key,
// and the rules for writes that land late or twice, hold for every member
// as they do for a single Mutex. Tokens returns those tokens. The one
// thing a member's claim adds is the Set's identity, a fresh xid for each
// Lock or Try call, shared by every claim of its members until it returns
// (the claim document's Waiter): it names whom a blocked claim waits for,
// and no walk of the queue reads it.
//
// All or nothing. Lock and LockContext return nil only once every member
// was held and none was lost (step 3); every other return, and every
// failed Try, leaves none held: each member is released, its claim
// withdrawn, or, when lost, left to run out as a lost hold is. A member's
// claim whose insert had no reply may still land later; it is withdrawn
// by its nonce, never trusted, and keeps no one waiting once its
// withdrawal lands, as for a cancelled dsync.Mutex.LockContext.
//
// Lost. Lost closes at the first member's loss, and Err names it. One
// session of the Client serves every member, so its expiry loses them
// all; a revocation or a stall loses them one by one.
//
// No deadlock among Sets and single lockers. Say X waits for Y when X's
// waiting claim has an unended conflicting claim of Y ahead of it in a
// key's queue, or X waits for a local turn that Y has. A single locker
// (one Mutex's or RWMutex's Lock), and a Lock waiting for its Set's own
// lock, hold nothing while they wait, so no wait is for them; a Set
// waiting at key K holds only members before K (step 2). Rank each wait
// by (K, t, -E): its key, t = 0 for a local turn and 1 for the key's
// queue, and E its claim's epoch. If X waits for Y at K, then Y either
// waits at K too, with a higher rank (Y has the turn X waits for and
// waits, if at all, in K's queue; or Y's claim is ahead of X's, so its
// epoch is lower), or Y holds K and waits at a key after K. So the rank
// rises along every wait, and since there are finitely many, no wait is
// part of a cycle. A cycle needs a key held outside the order: a Set's
// member locked by hand while the Set waits, or a process that locks
// single keys in its own order while it holds others.
//
// Liveness. If every hold outside the Sets ends, every Set gets all its
// members: the highest-ranked wait waits for nobody who waits, so it
// holds, and so on down. A Set cut off from the store loses its members
// with its session, and the others go on once that session expires.
//
// Fairness with single lockers. At each key a member's claim is a FIFO
// waiter from its insert on, as a single locker's is. A Set queues at a
// key only once it holds the members before it, so single lockers that
// queued at that key earlier hold first, and those that queue later hold
// after it; a Set is never served before a claim ahead of it at a key.
// The price is convoying: a Set that waits at its first key keeps no
// later key, and one that waits at a later key keeps the earlier ones
// while it waits.
//
// Others do likewise: Apache Curator's InterProcessMultiLock takes its
// locks in the given order and releases them in reverse
// (https://curator.apache.org/curator-recipes/multi-shared-lock.html);
// Redisson's RedissonMultiLock gives each lock a wait time and unlocks all
// on failure. Neither orders the keys, so two of either, named in
// opposite orders, wait for each other until their waits run out.
package lockset
