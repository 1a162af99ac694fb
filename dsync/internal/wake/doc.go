// Package wake is a dsync Client's wake-ups. A waiter announces, through
// the store's feed, which claim it waits for; the owner of that claim,
// after ending it, publishes that it ended (only if someone announced, so
// that an uncontended Lock+Unlock stays at two commands), and the waiter
// wakes and confirms its turn in the store (one run, or two reads by ID:
// dsync's TestWokenWaiterReads). Waiters in the owner's own process are
// woken directly. Events are hints, never proof: queues live in the
// store. A missed event costs latency, at most the safety poll interval;
// while the feed is down, or where the store has none, waiters poll. So
// do waiters without hints where processes that take hints are recorded,
// whose owners may not read the feed (mixed.go).
//
// Feeds lose events (FerretDB's cursor skips an event whose insert
// commits after a later one it has returned, which its driver makes rare
// by sending a process's events one at a time, and ends and
// announcements again when another may have overtaken them): for
// LostWindow after announcing itself a waiter looks again at doubling
// intervals, and the next in line looks when another event about its
// key passes, at most once per nextLookEvery.
//
// Every follower receives every event, so nothing is published
// periodically (announce.go).
//
// # Parts
//
// Each part owns its state and its lock:
//
//   - registry (registry.go): this process's waiters, by the claim they
//     wait for; the count of ends that Mark reads; which waiter is next
//     in line; the Held hints heard about the claims they wait for.
//   - claimWatch (claimwatch.go): waits for a key's claims to appear
//     (dsync's relock).
//   - announcer (announce.go): what this process announced it waits for.
//   - owner (owner.go): the claims this process made, the stream's
//     generation each was made in, the ends it made lately, and what
//     other processes announced they wait for.
//   - heldSender (held.go): the Held hints for our claims that others
//     wait for.
//   - lingers (linger.go): our lingering read claims, watched.
//   - peerCheck (mixed.go): whether processes that take hints are
//     recorded.
//   - Hub (hub.go, events.go, wait.go, settle.go): follows the feed,
//     settles it first in the background where the Client asks the
//     store whether to take direct hints (Env.Settle), hands each event
//     and each call of the Client to the parts, and runs a waiter's
//     wait. Its own lock guards its lifecycle only.
//
// The stream's state (live, off, paused) is three atomic flags that every
// part reads, and the feed settled (with whether it carries direct hints,
// and where hint-takers are recorded) one atomic pointer, set once: until
// it is, the Hub is as one whose stream is not live yet (settle.go). No
// two of these locks are ever held at once: under its lock a part calls
// only the clocks and the feed's Replay, never another part, nor anything
// that may call back (the fire functions of lingering claims are called
// under no lock; Env.Settle is called under none).
//
// # Invariants
//
// These held when one lock guarded everything; each now rests on one
// part's critical sections, or on the order of two parts' ones.
//
// A waiter hears of every end made since its mark. Mark is taken before
// the walk that tells the waiter what to wait for; an end of that claim
// made or heard of after it wakes the waiter, though it came before the
// waiter registered. The count of ends, the ends counted and the
// waiters are the registry's: an end is counted and its waiters notified
// in one critical section, and a waiter registers and compares the
// count of its claim's end with its mark in one (registry.enter,
// registry.endedLocked). TestWaiterHearsOfAnEventBeforeItRegistered.
//
// An announcement for a claim of ours is answered, however it and the
// claim's end cross. The owner keeps both what others announced and the
// ends it made lately: an announcement either comes before the end,
// which then finds it and publishes the end, or after, and finds the end
// remembered and is answered at once (owner.waiting and owner.ended, each
// one critical section). TestAnnouncementAfterTheEndIsAnswered. An end
// remembered is of one attempt at a claim: a claim withdrawn (its insert's
// outcome unknown) and made again at the same epoch has not ended, so
// owner.claimed forgets the earlier end, and an announcement for the claim
// waits for its real end instead of being answered by the withdrawal's.
// TestAnEarlierEndOfTheEpochDoesNotAnswerTheClaim.
//
// Whether the stream showed every announcement for a claim of ours
// (owner.seenAllLocked) compares the stream's generation as the claim was
// made with the current one: both are the owner's, recorded by
// owner.claimed and moved by owner.live under its lock, so an end reads
// them together with the claim's announcements (owner.ended).
//
// A linger hears every waiter. A lingering read claim's watch is one
// part (lingers); whether a waiter is known is two others (owner for
// another process's announcement, registry for a waiter of ours) and
// the stream's flags. WatchLinger registers the watch, then asks whether
// a waiter is known and whether this process can hear; each way of
// learning of a waiter records it first, then takes the watches: an
// announcement is recorded by the owner before the Hub takes the
// watches it concerns (Hub.waiting), a waiter of ours registers before
// it takes them (Wait), and Down, where this process can no longer
// hear, marks the stream down (and off) before it takes them all. So
// either WatchLinger's question finds the waiter, or the waiter's side
// finds the watch. If both do, the watch was taken and fire is called:
// WatchLinger then reports true (watched, and heard at once). Either
// way, fire is called once if it reports true, never if false.
// TestLingerWatchHearsAWaiterThatCrossesIt.
//
// The Held hints' news lives as long as a waiter for its claim: a hint is
// recorded only while one waits, and dropped with the last, under the
// registry's lock (registry.heardHeld, registry.enter).
//
// Whether a waiter is trusted (Hub.trustedUntil) asks the owner, then the
// registry, and is no invariant: a claim of ours that ends between the
// two wakes its waiters directly, and a Held hint that comes between
// them only moves the waiter's next look.
package wake
