// Package dsyncgocron runs github.com/go-co-op/gocron/v2 jobs on one
// replica at a time, on dsync. It is a module of its own
// (github.com/go-dsync/dsync/contrib/gocron), so that the library's users
// who do not schedule with gocron do not get it.
//
// gocron offers two ways to share jobs between schedulers, and this
// package implements both:
//
//   - An Elector (gocron.WithDistributedElector): one scheduler, the
//     leader of a dsync election, runs every job; the others skip them.
//     IsLeader answers from the election's own state, the leadership
//     context that is cancelled at the lease's local deadline, never from
//     a read of who led a moment ago. A leader that dies stops the jobs
//     until another takes over, up to the election's TTL (15 s by
//     default) later: a job every second wants a TTL of a few seconds.
//   - A Locker (gocron.WithDistributedLocker, or
//     gocron.WithDistributedJobLocker for one job): every scheduler ticks,
//     and each scheduled time runs once across them. A tick takes the
//     job's lock (a dsync.Mutex in the namespace "gocron") without
//     waiting, and then claims its slot: a dsync.Once for the job's name
//     and the scheduled time, rounded to the nearest multiple of the
//     Locker's slot length. The replica whose tick claims the slot first
//     runs the job; a tick that comes later, even after that run ended,
//     finds the slot taken and skips it.
//
// The slot is what a plain lock lacks. Schedulers' ticks for one time are
// a few milliseconds to a few hundred apart (clock skew, start-up, load):
// with only a lock held while the job runs, a job shorter than that spread
// runs once per replica, since each tick finds the lock free again
// (gocron issue 841). With the slot, ticks that round to the same
// multiple of the slot length are one run.
//
// Choosing the slot length: the job's interval (a job every minute: one
// minute), with the job's times on multiples of it, as cron expressions
// and gocron.WithStartAt give them. A tick then counts for its scheduled
// time as long as it comes less than half the slot length early or late.
// A job whose times are not multiples of the slot length (a DurationJob
// started at an arbitrary moment) has ticks near the rounding boundary,
// where two replicas' ticks for one time can fall on either side: start
// such jobs at a multiple (gocron.WithStartAt) or elect instead.
//
// What it guarantees: a slot's run starts at most once, across every
// scheduler on the store, whatever the ticks' order and however short
// the job; runs of one job never overlap while their lock's lease is
// valid. What it cannot: gocron hands the job no context of the lock, so
// a job that outlives its lease (a paused process) is not told; a job
// that must fence what it writes takes a dsync.Mutex itself. A slot whose
// claim could not be confirmed while the claiming replica held it (the
// store did not answer, or answered only after the hold ended) is
// skipped by that replica, and may be run by another; a replica whose
// claim meets another's that the store held back and applied after its
// own read skips it too (ErrUnavailable, wrapping dsync.ErrRanTwice), so
// such a slot may not run at all, but never runs on two replicas that
// were each told they won.
//
// A skipped tick says why: ErrRunning or ErrSlotTaken when the job runs or
// ran elsewhere (normal), ErrUnavailable when the store failed or did not
// answer (an outage: alert on it). Taking the job's lock is one attempt,
// bounded by the Client's try timeout (dsync.ClientWithTryTimeout, 2 s by
// default), so a store that hangs does not hold up the scheduler.
package dsyncgocron
