// Package dsync provides a Mutex, RWMutex, Semaphore and Once that
// processes share through a store. Do not use it where a [sync.Mutex] would
// do: every Lock and Unlock is a round trip to the store, and a lock held
// by a crashed process blocks others for up to one TTL.
//
// [Mutex] is a distributed mutual exclusion lock with the shape of
// [sync.Mutex]: it satisfies [sync.Locker] and adds TryLock, LockContext,
// UnlockContext, Lost and Token. Processes on many machines that use the
// same key in the same store exclude each other. [RWMutex] lets readers
// share and a writer exclude everyone. [Semaphore] lets at most n units be
// held at once, with the shape of x/sync's semaphore.Weighted. Both run the
// same protocol with claims that share a key. [Once] runs a function to
// success once per key across processes. Each lives in a namespace of its
// own, so a Mutex, an RWMutex, a Semaphore and a Once of one name are four
// different things.
//
// A Client is one process's connection to a store, and the one way in:
// NewClient makes it over a driver's store, and every Mutex, RWMutex,
// Semaphore, Once (and every leader.Election) is made on it. It owns the
// process's lease (its TTL, renew interval and clock are the Client's
// options), the protocol's state and the goroutines that keep them, and
// every primitive made on it shares them. Close it when done: its holds
// are released and its waiting claims withdrawn, so other processes go on
// at once. Stores are drivers (package dsync/driver), which know nothing
// of the protocol: the MongoDB one is dsync/mongo (dsyncmongo.NewStore),
// and dsync/driver/memory keeps one in memory for unit tests (memory.New;
// its Process gives each simulated process of a shared store switches to
// cut it off, so that a test partitions one process while another takes
// over).
//
// # Guarantees
//
// A Client holds one session: a lease of TTL length (ClientWithTTL) that every
// hold and every waiting claim of the process shares,
// renewed in the background with one store call per renew interval
// however many locks it holds or waits for. A key is a FIFO queue
// of claims: Lock appends a claim (the key's next epoch) and holds once
// every earlier claim has ended — released by its owner, withdrawn by a
// waiter that gave up, or dead because its session expired. Ownership never
// changes hands by updating someone else's record, only by inserting, so it
// is safe on every MongoDB-compatible store, and the epoch number is the
// hold's fencing token: it strictly increases from hold to hold of a key
// and is never reused, with one exception: an RWMutex with a read linger
// (WithReadLinger) takes its lingering read claim again with no new
// claim, so that value's read holds within one linger share the claim's
// token. A key's queue starts at a base taken from the
// store's clock (2^20 a second since 1970, about 2^50), so tokens grow
// also after its history was compacted away, or the collections emptied
// (then above the tokens handed out more than two seconds, plus twice
// the error bound of the store's time estimate, before the emptying, even
// when requests sent before it land after it, unless the
// store's clock was set back; see the store's documentation).
//
//   - While a hold is valid, no other hold of its key is valid.
//   - Waiters hold in the order they called Lock (FIFO); a releasing
//     process that locks again queues behind them. One exception: after
//     the collections were emptied, a process that knew a key from before
//     may queue its first claim on what it cached of the old queue, and
//     that claim can then wait behind the one that starts the key's new
//     queue, even if that one came later. TryLock never queues:
//     it holds at once or fails, within the try timeout (ClientWithTryTimeout)
//     whatever the store does; TryLockContext says why it failed.
//   - A hold is valid until its session's local deadline: the monotonic
//     send time of the session's last confirmed open or renewal plus the
//     TTL minus a margin of TTL/20. A confirmation that arrives after that
//     deadline does not count, and the session is then retired for good:
//     its holds are lost and its waiting claims withdrawn (with an outage
//     grace, the default, suspended first: see below). The deadline
//     counts time the machine spends suspended where the platform allows
//     (see Suspend below).
//   - At the deadline Lost() is closed, whether or not the store can be
//     reached; a hold is never lost silently.
//   - A hold of a primitive with a progress deadline (WithProgressDeadline)
//     whose work reported no progress (Progress) within it is lost too:
//     Lost() closes, and TTL/20 later its claim is released, so that the
//     next waiter goes on while the stalled process still runs.
//   - Another process moves past a claim whose owner stopped renewing only
//     after that claim's session has expired in the store's time, judged
//     with an error bound (see package clockcheck), so the clocks of the
//     processes may differ by any amount. It records that judgment, so a
//     renewal that arrives later cannot bring the claim back.
//   - With an outage grace (ClientWithOutageGrace; DefaultOutageGrace by
//     default), an outage of the whole store costs no hold: a claim is
//     judged dead only once the store's record of up-time (the times it
//     applied each process's renewals) shows it up for a TTL after its
//     owner's last renewal, or a grace past the expiry. Lost() still
//     closes at the deadline, with ErrSuspended; once the store is back, a
//     Mutex locked again (LockContext, without Unlock) holds again with
//     the same token if nobody could have taken over, and returns an error
//     wrapping ErrLost if the hold ended. A holder cut off alone is taken
//     over about when its session expires, as without a grace, where
//     other processes renew meanwhile; where none does, a grace later.
//   - These hold even when a request reaches the store long after its
//     sender gave up on it, or after the sender's later requests (a
//     stalled connection delivers its bytes late): a late renewal can only
//     lengthen the stored session, a claim whose insert had an unknown
//     outcome is withdrawn, and nothing the Mutex or the store decides
//     rests on a reply that arrived after its deadline. A driver need not
//     apply requests in order or atomically (see package dsync/driver);
//     the protocol and its safety argument are in the repository's
//     dsync/internal/queue package, whose tests replay thousands of seeded
//     schedules with late and reordered writes.
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
// believing it still holds the lock: the store may have let another
// process take over meanwhile. The local deadline therefore has to count
// the time the machine spends suspended, and what does so depends on the
// platform:
//
//   - On Linux, Go's monotonic clock (CLOCK_MONOTONIC) stops while the
//     machine is suspended. A Client's clock adds the time spent suspended since
//     the process started, measured as CLOCK_BOOTTIME − CLOCK_MONOTONIC, to
//     its readings, and its timers wait on a timerfd of CLOCK_BOOTTIME,
//     which counts the suspend. A Lost() channel therefore closes as soon
//     as the deadline has passed, whatever the machine did meanwhile: at
//     the deadline if the machine resumed before it, at the resume if it
//     slept past it. After a resume past the deadline, a call to Lost() also
//     returns a closed channel and UnlockContext reports ErrLost at once. A
//     resume before the deadline sends the renewal that the suspend made
//     overdue at once, so the hold survives if the store confirms it in
//     time. Where the kernel offers no such timerfd (before
//     Linux 3.15), the timers notice a suspend only once a second of awake
//     time: a Lost() channel may close up to a second after the deadline,
//     and an overdue renewal go out up to a second after the resume. The
//     MongoDB store's clock, clockcheck.SystemClock, counts suspended
//     time in the same way.
//   - On macOS and iOS, Go's monotonic clock (mach_absolute_time) does not
//     advance while the machine sleeps, and a Client's clock adds nothing: after
//     a sleep the deadline is late by the time spent asleep.
//   - On Windows, Go's monotonic clock reads the system's interrupt time,
//     which Microsoft documents as counting time spent in sleep and
//     hibernation (only the "unbiased" interrupt time leaves it out);
//     a Client's clock adds nothing. dsync's tests do not cover this.
//   - Elsewhere a Client's clock is Go's monotonic clock, which may not count
//     time spent suspended.
//
// Where suspended time is not counted, a holder suspended past its lease
// may act on the lock after resuming, just as a paused process may (see
// Limits). A virtual machine paused by its host is not suspended in this
// sense: its kernel may count the pause in neither clock. Even on Linux,
// code that was running when the machine was suspended carries on when it
// resumes, before anything can check the deadline. Fencing tokens are what
// protect the resource in both cases.
package dsync
