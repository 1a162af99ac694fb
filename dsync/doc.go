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
//     A confirmation that arrives after that deadline does not count. The
//     deadline counts time the machine spends suspended where the platform
//     allows (see Suspend below).
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
// # Suspend
//
// A holder whose machine is suspended past its deadline must not resume
// believing it still holds the lock: the backend may have let another
// process take over meanwhile. The local deadline therefore has to count
// the time the machine spends suspended, and what does so depends on the
// platform:
//
//   - On Linux, Go's monotonic clock (CLOCK_MONOTONIC) stops while the
//     machine is suspended. SystemClock adds the time spent suspended since
//     the process started, measured as CLOCK_BOOTTIME − CLOCK_MONOTONIC, to
//     its readings, and re-arms its timers when it grows. After a resume
//     past the deadline, a call to Lost() returns a closed channel and
//     UnlockContext reports ErrLost at once, and a Lost() channel obtained
//     before the suspend is closed within about a second of the resume (one
//     goroutine per process checks every second while timers are pending).
//     A resume before the deadline triggers an overdue renewal within the
//     same second. The MongoDB backend's clock, clockcheck.SystemClock,
//     counts suspended time in the same way.
//   - On macOS and iOS, Go's monotonic clock (mach_absolute_time) does not
//     advance while the machine sleeps, and SystemClock adds nothing: after
//     a sleep the deadline is late by the time spent asleep.
//   - On Windows, Go's monotonic clock reads the system's interrupt time,
//     which Microsoft documents as counting time spent in sleep and
//     hibernation (only the "unbiased" interrupt time leaves it out);
//     SystemClock adds nothing. dsync's tests do not cover this.
//   - Elsewhere SystemClock is Go's monotonic clock, which may not count
//     time spent suspended.
//
// Where suspended time is not counted, a holder suspended past its lease
// may act on the lock after resuming, just as a paused process may (see
// Limits). A virtual machine paused by its host is not suspended in this
// sense: its kernel may count the pause in neither clock. Even on Linux, code that was running when the machine was
// suspended carries on when it resumes, before anything can check the
// deadline. Fencing tokens are what protect the resource in both cases.
//
// Do not use dsync where a sync.Mutex would do: every Lock and Unlock is
// a round trip to the backend, and a lock held by a crashed process blocks
// others for up to one TTL.
package dsync
