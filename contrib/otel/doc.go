// Package dsyncotel records dsync's and leader's observer events as
// OpenTelemetry metrics, in a module of its own
// (github.com/go-dsync/dsync/contrib/otel) so that the library's users
// who do not want OpenTelemetry do not get it.
//
//	obs, err := dsyncotel.Observer(otel.Meter("dsync"))
//	...
//	locks, err := dsync.NewClient(store, dsync.ClientWithObserver(obs))
//	...
//	transitions, err := dsyncotel.LeaderObserver(otel.Meter("dsync"))
//	...
//	e, err := leader.NewElection(locks, "billing", leader.WithObserver(transitions))
//
// The instruments, with their units in the semantic conventions' style
// (seconds, or a count of what the braces name):
//
//   - dsync.acquire.duration [s], histogram: how long a call that asked
//     for a hold took, with attributes dsync.kind (mutex, rwmutex-read,
//     rwmutex-write, semaphore, once, election: a leader.Election's lease)
//     and dsync.outcome (acquired, held: a try that found the key held,
//     canceled, error).
//   - dsync.hold.duration [s], histogram: how long holds lasted, with
//     dsync.kind and dsync.outcome (released, lost).
//   - dsync.hold.lost [{hold}], counter: holds lost without their caller,
//     with dsync.kind and dsync.lost.cause: stalled (its work reported no
//     progress within its progress deadline, dsync.WithProgressDeadline),
//     revoked (an operator revoked its session), closed (its Client was
//     closed while it held), suspended (its lease's deadline passed with
//     its session suspended, as in an outage of the whole store, with an
//     outage grace: the hold may be taken back), or lease (its lease
//     could not be confirmed in time: renewals failed, or the store no
//     longer knew the session).
//   - dsync.waiting [{call}], gauge: callers of this process waiting for
//     a hold.
//   - dsync.hold.age [s], gauge: the age of the oldest hold this process
//     has now, per dsync.kind (and dsync.key with WithKeys); no series
//     while nothing is held. The hold's duration is recorded only when it
//     ends: this shows a hold that does not end.
//   - dsync.lease.renewal.duration [s], histogram: renewals' round trips.
//   - dsync.lease.renewal.headroom [s], histogram: how much of the lease
//     was left when a renewal was confirmed: alert when it nears zero.
//   - dsync.lease.renewal.failures [{renewal}], counter.
//   - dsync.lease.outages [{outage}], counter: outages of the whole store
//     the lease rode through (suspended at its deadline, resumed once the
//     store was back: dsync.ClientWithOutageGrace).
//   - dsync.hold.kept [{hold}], counter: holds lost to a suspension whose
//     claims those resumes kept, for their owners to take back with the
//     same tokens.
//   - dsync.lease.suspension.duration [s], histogram: how long the lease
//     was suspended in each outage it rode through.
//   - dsync.lockset.deadlocks [{deadlock}], counter: deadlocks between
//     lock sets (package dsync/lockset, with a deadlock timeout) that a
//     set of this process broke by giving up its wait, as the youngest set
//     of the cycle; with WithKeys, dsync.key is the stored key it waited
//     at.
//   - dsync.observer.dropped [{event}], counter: events the observer fell
//     too far behind to record.
//   - leader_election_master_status, gauge, attribute name: 1 while this
//     candidate leads the election name, 0 otherwise; the name and
//     meaning of client-go's, so that alerts on two leaders at once (a
//     sum above 1) carry over from Kubernetes controllers.
//   - dsync.leader.transitions [{transition}], counter, attributes name
//     and dsync.leading (true when a term began).
//
// The histograms advise bucket boundaries for lock latencies (a View
// may replace them): from a millisecond, through the semantic
// conventions' boundaries for HTTP durations, to a minute for the lease's
// (renewal round trips and headroom), and to an hour for waits and holds.
//
// The counters and dsync.waiting are at 0 from the Observer's creation,
// dsync.hold.lost for each kind and cause (30 series), so that an alert
// on them reads 0 before the first failure rather than an absent series.
// The leader's instruments start with the first transition: election
// names are not known before.
//
// Prometheus alerting rules on these metrics, as Prometheus names them
// (dsync_hold_age_seconds, dsync_lease_renewal_failures_total, ...), are
// in the module's alerts directory (dsync.rules.yml), with promtool unit
// tests beside them.
//
// Keys are not attributes by default: lock names often carry dates or
// IDs, and each would be a time series. WithKeys adds them (dsync.key),
// for a deployment whose keys are few.
package dsyncotel
