// Package integration proves dsync's guarantees under faults, against a
// real server, the way Jepsen and etcd's robustness tests do: record every
// hold, then check the whole history against the model.
//
// The tests start worker processes (the test binary re-executed, see
// package worker) that lock one key in a loop and increment a register
// under the lock. Each worker appends its events to a history file of
// its own, timestamped with CLOCK_MONOTONIC, which every process on the
// machine shares: when each hold began, every local deadline it had,
// when its loss was signalled, when it ended, and each register write.
// The test injects faults, then merges the histories and checks them
// (package history):
//
//   - no two holds of a key are valid at once, a hold being valid from
//     when Lock returned to when it ended or its deadline passed,
//     whichever came first (a killed holder: its last recorded deadline);
//   - tokens strictly increase in the order holds began;
//   - every loss is signalled no later than its deadline plus the margin
//     the library reserves for it (TTL/20), not counting time the process
//     was paused (SIGSTOP) or stalled (each worker records the moments it
//     was not scheduled at all, as happens on an overloaded host); the
//     largest lateness measured is reported;
//   - no hold is relied on past its deadline plus the margin without a
//     loss signal, the same time not counted (the worker times the end of
//     a hold, and reads whether the signal had fired, the moment it stops
//     relying on it, before any write or lock of its own);
//   - no reply that arrived after the deadline in force extended a hold
//     (each worker predicts its deadlines from the send and reply times
//     of its backend calls, a renewal's send being the read of the
//     server's time its expiry came from, and records them as they
//     change);
//   - Unlock called after the deadline reports ErrLost;
//   - observers see leaders with increasing tokens;
//   - the register lost no acknowledged increment.
//
// The checker is shown to catch violations: its unit tests feed it broken
// histories, and every real history that passes is also checked again
// with an overlap, a token swap, a late loss and a silent one injected,
// which must be rejected. The fencing demonstration is a negative control too: without
// fencing, a holder paused between its check and its write loses an
// update, and the checker must find it.
//
// The faults, one test each: SIGKILL of the holder (TestSIGKILLHolder),
// SIGSTOP past the TTL (TestSIGSTOPHolder, fenced and unfenced), a server
// restart on the same data (TestServerRestart), a network partition or
// delayed replies through a TCP proxy (TestPartition, package
// faultproxy), requests delivered after their sender gave up on them
// (TestDelayRequests), client clock skew and wall-clock jumps
// (TestClockSkew), leader election under all of them (TestElection),
// everything mixed (TestMixedFaults), and the primitives that share a key
// under each fault in turn: an RWMutex and a Semaphore
// (TestRWMutexUnderFaults, TestSemaphoreUnderFaults: no writer beside
// anyone, units within the limit) and a Once on slot keys
// (TestOnceUnderFaults: no run after its record was confirmed or seen,
// every record names a run that succeeded), lock sets of 2 to 4 of six
// keys named in random orders (TestLockSetsUnderFaults: each member an
// ordinary hold of its key, every grant whole, and sets granted again
// after each fault), and a leader.Partition of six
// shards over four workers under each fault in turn and graceful leaves
// (TestPartitionUnderFaults: each shard's terms are holds of its key, and
// every shard is owned and balanced again after each fault). Two tests
// set keys each held by a process with a waiter in another: one cuts a
// single holder's connection while the store stays up for the others
// (TestCutAloneStillReplaced, its long form's workers with an outage
// grace: its waiter takes over once its lease has run out in server
// time, within 9 s of its deadline, with a higher token, and the cut
// holder does not take its hold back), the other stops the server for
// everyone at once,
// 12 s at a 2 s TTL (TestStoreOutage, mongotest.Process.Pause, a long
// test: a measurement of the holds lost without a grace and of the time
// to the keys' next holds, asserting only that no token goes back and
// nothing overlaps).
//
// Outages of the store ridden through (issue 75), by workers with an
// outage grace (worker.Config.Grace) that take back a hold or term lost
// to a suspension (worker.Config.Relock: a Mutex locked again without
// Unlock, Campaign called again without Resign; a Partition's Run does
// it itself): the server stopped (SIGSTOP) or killed and restarted for
// longer than the TTL and shorter than the grace while one worker holds
// and others wait (TestOutageRelock, and TestServerRestart/relock, a
// long test); the holder must hold again with the same token, nobody
// between, which the history checker accepts as a resume. The long
// acceptance tests: TestOutageRiddenThrough (12 s outages at a 2 s TTL
// while keys are held with waiters queued, an election of three and a
// Partition of 16 shards run: every hold and term taken back with its
// token, no shard moved) and TestHolderKilledDuringOutage (a holder
// killed in the outage is replaced within five TTLs of the store's
// return, the others taken back). The fault mix (TestMixedFaults) draws
// outages too, for workers without a grace. Beside the
// faults, TestRollingUpgrade upgrades five election workers under the
// version rule (leader.WithVersionRule) one slot at a time, in surge
// order (start a new worker, wait until it is a live member, SIGTERM an
// old one), with and without priorities and preemption: its terms are
// holds of the lease's key, leadership changes at most once per step,
// never returns to the old version once the new one led, and ends on
// the new one (each case once, three times with DSYNC_LONG=1).
//
// # Direct hints
//
// Most clusters run with direct hints on (dsync.ClientWithHints): every
// worker but w3, which waits as a process without hints does beside the
// others, takes hints on a loopback UDP port behind a relay of its own
// (package hintrelay), whose address it advertises, so every hint sent
// to it passes the relay. The relay drops a tenth of the hints, sends a
// tenth twice, holds a tenth back for up to 300 ms while later ones pass
// (they arrive late, and those a later one passed are counted as
// overtaken), and beside the hints it passes on sends forgeries (a hint
// altered under its MAC, or under another key), replays of hints it passed
// on a second or more before (the oldest it keeps, if none is that old),
// and random bytes.
// TestSIGSTOPHolder's clusters run without hints. Each worker records its
// hint transport's counts (hint.Stats, EvCounts); a cluster fails if it
// handed over twenty times or more after a release (a takeover after a
// SIGKILL goes by expiry, which no hint tells; clusters with SIGKILLs are
// left out, see minHandoffsForWakes) and no hint woke a waiter before the
// store's feed did, or if its relays forged or replayed hints (five or
// more) and its workers rejected or refused none; the run fails if no
// hint woke a waiter at all in twenty or more such handoffs (a run of one
// short test may have fewer). The summary line counts the hints and the
// faults done to them.
//
// # Runs
//
// The odd-numbered workers (w1, w3) read a key's queue a run at a time
// (driver.RunReader), which the MongoDB driver declines on FerretDB for
// its cost: internal/clienthook turns it on for them, so that walks by
// runs and walks by ID meet in every cluster. Each worker counts the runs
// it read (EvCounts); the run fails if no worker read one.
//
// # Requests delivered late
//
// A request can reach the server long after its sender gave up on it,
// even after the sender's later requests: TCP delivers what it held back
// once a stalled path clears, and the driver abandons the operations in
// flight when its heartbeats time out (it closes their connections), then
// carries on over new ones. The delay-requests fault does exactly that to
// a holder: its proxy stalls the requests from its next renewal on for
// 0.85–1.1 s, enough for a heartbeat and the driver's immediate retry of
// it to time out (the workers it is injected into use connectTimeoutMS=200
// and a 500 ms heartbeat, the driver's minimum), so the driver closes the
// renewal's connection; the holder renews over a new connection; and the
// stalled bytes reach the server 0.8–1.2 TTL after they were sent, while
// the hold is still valid and around when the stalled renewal's expiry
// runs out. The proxy passes the client's close on after them as a
// half-close, so the server still executes and answers them. The holder
// needs a TTL of a few seconds to outlive the stall and the driver's
// recovery, so these workers have a 3 s TTL: TestDelayRequests runs on
// such workers, and TestMixedFaults and TestElection, whose workers have
// a 1 s TTL, inject the fault into a guest worker with a 3 s TTL that
// joins for one hold and leaves.
//
// The proxies follow the MongoDB wire protocol far enough to count the
// write commands (insert, update, delete, findAndModify) they delivered
// after their client had closed the connection, the collection each acts
// on, and those the server applied (its reply had ok: 1 and n > 0; for an
// update or a findAndModify, n counts the documents matched, so a
// renewal's $max that raised nothing is applied all the same). The stall begins with a
// session renewal, a findAndModify of a document of the sessions
// collection (dsync_locks_sessions) other than the server-time samples'
// "#clock", not with any write: claims and end markers are
// inserts into dsync_locks, wake-up events inserts into
// dsync_locks_events. A test that injected delay-requests fails if none
// of its late session renewals was applied: the fault must keep its
// teeth.
//
// # Progress deadlines
//
// TestStalledHolder, TestStalledTerm, TestNoFalseStall and
// TestProgressSendsNothing run in the test process, each Client (with its
// own connection pool and session) standing for a process, with a
// progress deadline of 1 s and a 2 s TTL: a holder (or leader) whose work
// stops reporting progress is replaced within the deadline plus one TTL
// (p99 of 100 holders), after its Lost() closed and with a higher token,
// and its stall is recorded; holders that pause up to half the deadline
// between reports are never stalled; and a process whose holder reports
// progress 10^4 times and more sends the same commands, counted by the
// driver's command monitor, as one whose holder reports nothing.
//
// # The long run
//
// The default run (`go test`) injects each fault once or twice, and a
// test that cycles through kinds of fault meets a quarter of them, from
// a random one on (it logs which);
// with DSYNC_LONG=1 (as CI runs it) each fault is injected a few times
// and every kind is met, within a few minutes. The soak run repeats each
// test many times and runs
// TestMixedFaults until the lock has been handed over 1,000 times
// (DSYNC_SOAK_HANDOFFS changes that):
//
//	DSYNC_SOAK=1 go test -v -timeout 3h -run . ./integration/
//
// Set DSYNC_HISTORY_DIR to keep the history files of every test there,
// with each worker's standard error (its log); DSYNC_WORKER_LOG sets the
// workers' log level ("debug", "info", "warn" by default, "error"). At
// debug a worker also logs every command its Client sends as it ends:
// name, collection, time taken and error.
// Without it, a failed test's history files are copied out of its
// temporary directory into the system's (its log says where).
// The suite prints a summary line at the end (shown with -v, or when
// testing this package alone from its directory): workers, holds,
// handoffs, faults by kind, the writes applied after their sender gave up
// (late-applied-writes=N, of the late writes the proxies delivered, under
// any fault, and how many of the N were session renewals), the runs
// read, the hints
// (processes that took them; sent, taken, waiters woken first, rejected,
// refused) and the relays' faults (datagrams relayed, dropped,
// duplicated, delayed, forged, replayed, garbage), violations, the
// largest loss-signal lateness, and the negative controls detected.
//
// # Beside the suite
//
// The directory also holds the library's other tests through its
// packages, on the floor above all they import: integration/apisim (the
// public-API simulation, in fake time), and the modules
// integration/browsertest (the status page in headless Chromium) and
// integration/fencedb (fence/fencesql on PostgreSQL, MariaDB and SQLite).
package integration
