// Package dsync provides a distributed mutual exclusion lock, Mutex, with
// the shape of sync.Mutex: it satisfies sync.Locker and adds TryLock,
// LockContext, UnlockContext, Lost and Token. Processes on many machines
// that use the same key on the same Backend exclude each other. The
// MongoDB backend is in dsync/mongo; NewMemoryBackend gives an in-process
// backend for unit tests.
//
// # Guarantees
//
// A hold is a lease of TTL length that the Mutex renews in the background.
// Ownership of a key changes hands only by creating the key's next epoch,
// never by updating someone else's record, so it is safe on every
// MongoDB-compatible store, and the epoch number is the hold's fencing
// token: it strictly increases from hold to hold of a key and is never
// reused.
//
//   - While a hold is valid, no other hold of its key is valid.
//   - A hold is valid until the local, monotonic send time of its last
//     confirmed acquire or renewal plus the TTL minus a margin of TTL/20.
//     A confirmation that arrives after that deadline does not count.
//   - At the deadline Lost() is closed, whether or not the backend can be
//     reached; a hold is never lost silently.
//   - Another process takes over only after the holder's lease has expired
//     in the backend's time, judged with an error bound (see package
//     clockcheck), so the clocks of the processes may differ by any amount.
//   - Renewing every lock a process holds through one backend costs one
//     backend call per renew interval, not one per lock.
//   - These hold even when a request reaches the backend long after its
//     sender gave up on it, or after the sender's later requests (a
//     stalled connection delivers its bytes late): a late renewal can
//     only lengthen the stored lease, and nothing the Mutex or the backend
//     decides rests on a reply that arrived after its deadline. Backends
//     must keep that promise (see Backend); dsync/mongo states how it does.
//
// # Limits
//
// A lease cannot stop a process that is paused — by a garbage collector,
// a debugger, SIGSTOP or an overloaded host — from acting after its lease
// ended and another process took over: it may not look at Lost() again
// until it is too late. A lock alone therefore cannot protect a shared
// resource from stale writers. Pass Token() with each write and have the
// resource reject tokens lower than the highest it has seen; that makes the
// stale write fail instead of corrupting data.
//
// Do not use dsync where a sync.Mutex would do: every Lock and Unlock is
// a round trip to the backend, and a lock held by a crashed process blocks
// others for up to one TTL.
package dsync
