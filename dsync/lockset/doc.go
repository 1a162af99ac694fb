// Package lockset holds several dsync locks all or nothing: a Set of
// members (a Mutex, or the read or the write side of an RWMutex), each
// with its own fencing token, that never deadlocks with another Set or a
// single locker, whatever order their callers name the keys in (unless
// a caller waits while it holds a key outside its Set: see Guarantees).
// A held Set may grow (LockMore) out of that order; deadlocks between
// Sets so grown are found and broken, when asked for (see Deadlocks).
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
// withdrawal lands, as for a cancelled dsync.Mutex.LockContext. LockMore
// is all or nothing over the members it adds, by the same steps: it
// returns nil holding all of them (and none lost), or an error holding
// none of them and the Set's others as before; but a *DeadlockError,
// after which the Set holds nothing.
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
// part of a cycle. A cycle needs a key held outside the order: a Set
// grown by LockMore (it waits for keys below those it holds), a Set's
// member locked by hand while the Set waits, or a process that locks
// single keys in its own order while it holds others. Two waits end by
// themselves and are part of no deadlock: for the claim of a try of step
// 1, which may take up to the try timeout (a slow store, a claim ahead
// not yet judged) while its Set holds members after it, and for the
// claim of a member lost while its Set waits, which is left to run out,
// as a lost hold is, while the Set starts again behind it (step 3).
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
// # Deadlocks
//
// LockMore takes keys while the Set holds others, in whatever order its
// callers grow their Sets, so two Sets may each hold what the other
// waits for. WithDeadlockTimeout(D) has such cycles found and one wait of
// each given up; without it (the default) they wait until a context
// ends, as single locks do.
//
//   - Notes. A Set that has waited D for a member while it holds at
//     least one records a note (driver.Wait, through the store's Waits
//     role): its identity (the Waiter of its claims, one per Lock call),
//     the claim it waits with, the claims it holds, and Since, the store's
//     time when it began to hold, kept when a Lock starts again. It
//     records one per waiting claim, numbered, each once.
//   - Check. From then on, every D, the waiting Set reads the wait-for
//     graph from itself (dsync/internal/waitgraph): X waits for Z through
//     a claim H when X's latest note waits with a claim that H, an
//     unended claim of Z, holds ahead of and conflicts with, and Z's
//     latest note names H among its holds. It finds a shortest cycle
//     through itself of at most 16 Sets, then re-reads every claim of the
//     cycle (the second pass).
//   - Victim. The Set of the greatest (Since, identity) among the
//     cycle's notes: the youngest. Only the victim acts, on a cycle through
//     itself that it found and verified, and only on its own wait: it
//     withdraws its waiting claim, as a cancelled LockContext does, and
//     releases what it holds. A LockMore then returns a *DeadlockError
//     naming every edge, its Set unlocked; a Lock (all at once) starts
//     again, as old as it was. The break is recorded (driver.Deadlock,
//     through the Deadlocks role), for people.
//
// Safety. Detection adds no rule to the queue: no Set ends another's
// claim (a marker from a detector could race that claim's grant and end
// a hold), notes and records are reports that no grant reads, and the
// victim's withdrawal is an ordinary one of its own claim by its nonce.
// Exclusion, tokens and all or nothing hold as above. A note is inserted
// once under an ID its Set and number fix: one landing twice is
// ErrExists, one landing late is not its Set's latest once a later one
// is, and a number is never reused, even after a put without reply.
//
// No false positive. A Set is broken only as the victim of a cycle of
// waits that existed whole at one instant, each of at least D:
//
//   - a cycle that resolves itself within D (a context ends, a holder
//     unlocks) is never whole in the notes: each needs D of waiting;
//   - a chain that is not a cycle ends at a holder of no Set (a single
//     lock), a Set with no note (it does not wait), or a note that does
//     not name the holder, and never comes back: no one acts;
//   - a stale note (its Set no longer waits with its claim) makes no edge
//     out of its Set: the claim it names has ended, or holds and so has no
//     holder ahead, and the second pass finds it ended;
//   - a cycle that the checking Set waits on but is not part of is left
//     to its own members;
//   - reads made one after another could stitch a cycle that never was:
//     claims only end, so every claim the second pass reads unended was
//     unended throughout the first, and at its end every wait of the cycle
//     had an unended conflicting holder, itself waiting: one cycle at one
//     instant. A hold granted before the victim withdraws wins: it keeps
//     it and breaks nothing.
//
// Two cases remain, in which a victim gives up a wait that would have
// ended: the cycle resolves after the second pass and before the
// withdrawal (within one check); or a member gave up its wait, but its
// withdrawal has not landed (the Client still sends it).
//
// Bound and liveness. A cycle exists from the start of its last wait, t.
// Each member notes its wait D after it began, so by t+D plus the store
// time of its note (a queue read and an insert), and checks every D, so
// the victim gives up its wait by t+2·D plus that store time and one
// check's reads (a tick is not cut short at D: on a slow store it would
// never finish). Its withdrawal, record and releases follow. The victim of a
// cycle is never its oldest Set, so the oldest waiting Set of a cycle
// finishes. Cycles that share Sets are broken one a round: the youngest
// Set on any of them is the victim of whichever cycle it finds through
// itself. A Set cut off from the store breaks nothing; its session's
// expiry ends its claims.
//
// Not detected: cycles of more than 16 Sets (they wait until a context
// ends); waits for a local turn in one process; plain Mutex and RWMutex
// holds (a Mutex belongs to no goroutine, so nothing ties one caller's
// hold to its wait); Semaphores; elections and Partitions (their claims
// name no Set: they end chains, and are never victims); and everything on
// a store without the Waits role, where detection is off.
//
// Cost. Off (the default): nothing. On: a wait that holds nothing costs
// nothing, and one shorter than D a goroutine and a timer, no store call.
// A wait past D while holding costs one note per waiting claim and, each
// D, one queue read per Set on the path from it (its own, which also
// finds its waiting claim, included), one note read per Set reached, and
// 2L queue reads to verify a cycle of L Sets. Lock's own waits never
// deadlock with each other, yet would pay that past D: this is why
// detection is off unless asked for.
//
// Others do likewise: Apache Curator's InterProcessMultiLock takes its
// locks in the given order and releases them in reverse
// (https://curator.apache.org/curator-recipes/multi-shared-lock.html);
// Redisson's RedissonMultiLock gives each lock a wait time and unlocks all
// on failure. Neither orders the keys, so two of either, named in
// opposite orders, wait for each other until their waits run out.
// Databases break deadlocks between their transactions: PostgreSQL's
// waiter checks the graph after deadlock_timeout and aborts itself
// (https://github.com/postgres/postgres/blob/master/src/backend/storage/lmgr/README);
// TiKV's detector fails the wait that would close a cycle. A lock service
// holds no graph in memory, hence the notes, D old, and the second pass;
// and the victim is the youngest, not the first to check, so that the
// oldest work finishes.
package lockset
