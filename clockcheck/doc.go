// Package clockcheck measures the local clock against a MongoDB server's,
// within a proven error bound. Do not rely on that bound where the
// assumptions listed under Limits below do not hold.
//
// It also estimates the server's current time without asking it each time.
//
// [Measure] and [Check] report the local wall clock's offset from the server;
// Check fails when the clock is certainly too far off, for programs that
// should refuse to run on a badly set host. An [Estimator] answers "what time
// is it on the server now" as an [Interval]; dsync's MongoDB backend uses its
// Earliest to decide that a lease has expired in server time, so that client
// clocks off by any amount, even hours, cannot break mutual exclusion.
//
// # The bound
//
// A sample is one hello command (or the legacy isMaster, when the server
// answers hello with a command error or without localTime; if neither
// reports a localTime, measuring fails with [ErrNoLocalTime] and both
// commands' answers). The server reads its clock (localTime, in
// milliseconds) at some instant between the moment the request left and the
// moment the reply arrived, and those two moments are measured on the local
// monotonic clock. Whatever the split of the delay between the two legs
// (all of it on one leg, say), that instant is within half the round-trip time
// (RTT) of the midpoint, and the server's truncation to the millisecond
// hides at most 1 ms more. So the server's time at the midpoint is within
// Uncertainty = ⌈RTT/2⌉ + 1 ms of localTime (Cristian's method). Of
// several round trips the one with the smallest RTT is kept.
//
// An [Estimator] carries a sample forward on the local monotonic clock,
// widening it by the maximum drift rate (see [WithMaxDrift]) over the time
// since the request was sent. It never reads the wall clock for this, so a
// wall clock that is wrong or jumps does not affect it.
//
// # Limits
//
// The bound holds under these assumptions, and only them:
//
//   - The server tells the truth: its localTime is its clock, read while it
//     handled the request. A server, proxy or load balancer that caches or
//     fakes replies, or servers of one deployment whose clocks disagree,
//     breaks it. The bound is about the clock of the server that answered.
//     Behind a mongos router or a load balancer that is the router's clock,
//     not the clock of the primary that applies writes: sample with
//     [WithProbe] (a write that reads back $currentDate) where that
//     matters, and bound the skew between replica-set members with
//     [WithMemberSkew].
//   - The two clocks drift apart by at most the configured rate (500 ppm by
//     default, ample for any working clock; NTP assumes the same). A server
//     whose clock is stepped, or a drift beyond the bound, makes the interval
//     wrong until the next re-sample, which notices the contradiction and
//     starts afresh from the new sample.
//   - The local monotonic clock counts all elapsed time, including time the
//     machine spends suspended. On Linux, Go's monotonic clock stops while
//     the machine is suspended; [SystemClock] adds the time spent suspended
//     (CLOCK_BOOTTIME − CLOCK_MONOTONIC), never more than the real suspend.
//     On macOS and iOS, Go's monotonic clock does not advance while the
//     machine sleeps, and nothing is added; on Windows it reads the
//     interrupt time, which Microsoft documents as counting sleep; other
//     systems' clocks may not count suspended time. Where a suspend is not
//     counted, Earliest is still a lower bound afterwards, which is what
//     expiry decisions use, but Latest may be too early by up to the time
//     suspended until the next re-sample. Waits computed by
//     [Estimator.Until] and spent on Go timers, which count only awake
//     time on Linux, are longer after a suspend, never shorter.
//
// Asymmetric routes need no assumption: the bound is half the whole RTT.
// The Offset of a sample is relative to the wall clock as it was when the
// sample was taken; if the wall clock jumps later, the offset no longer
// describes it, while an Estimator's interval stays correct.
package clockcheck
