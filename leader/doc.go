// Package leader elects one leader among processes, through a dsync.Client.
// Do not use it alone where a paused leader's late writes would do harm:
// fence those writes with the term's token (Info.Token, TermOf).
//
// An Election is made on the process's Client (NewElection). Its member
// status goes to a MemberStore (WithMembers; MongoDB's in leader/mongo).
// Campaign blocks until this process leads. It returns a context that is
// cancelled the moment leadership can no longer be guaranteed. Run
// restarts leader-only work after every re-election, and composes with
// errgroup.
//
// # Guarantees
//
// Leadership is a dsync lock of the Election's Client, in the election
// namespace (operator.LockKey(name)). So a process's elections share its lease with
// its locks, and no plain lock is ever an election's lease. It has the
// guarantees of dsync.Mutex:
//   - at most one leader holds a valid lease at any time;
//   - each term has a fencing token larger than every earlier term's;
//   - the leadership context is cancelled at the lease's local deadline,
//     even when the store cannot be reached;
//   - takeover is judged in the store's time, so client clock skew does
//     not matter;
//   - with an outage grace (dsync.ClientWithOutageGrace), a term lost in an
//     outage of the store is taken back by the next Campaign, with the
//     same token, when the outage did not end it: the same term goes on,
//     and nobody else led in between.
//
// Candidates queue for the lock. When the leader resigns, the candidate
// that has campaigned longest leads next (with the Mutex's one exception,
// after the collections were emptied: see package dsync). Leader reports
// the head of that queue. Transfer hands leadership to a chosen candidate
// instead: those queued ahead of it step aside (claim again, behind it).
// The leader releases once it is next, so the grant rule is the lock's
// all the same.
//
// The steering options (WithPriority, WithPreemption, WithVersionRule),
// off by default, use the same two moves at each heartbeat. Waiting
// candidates step aside for better ones queued behind them. A leader
// gives way to a better one queued (cause ErrPreempted). Under the
// version rule, an older candidate neither waits nor begins a term while
// a newer one is live.
//
// # What it cannot promise
//
// A leader paused past its lease (GC, SIGSTOP) may act after a new leader
// started, before it sees its context cancelled. Pass Info.Token (or
// dsync.Mutex.Token) to resources that can reject stale writers. Observe
// and OnNewLeader poll. So they report, in order, every leader that held
// office for longer than the poll interval, but may miss shorter terms.
//
// # Members and values
//
// Who leads is decided here, once, for every store: the head of the
// lease key's queue, read through the Client, with what the leader's
// member status adds. Each candidate keeps a member status document
// (host, pid, version, whether it leads, last seen, what it advertises)
// in the MemberStore, written only by itself. Members lists the live
// ones. Without a MemberStore an Election elects and Leader reports who
// leads, and Members and Proclaim return ErrNoMembers.
//
// A leader advertises a value (Info.Value: where it serves, say): its
// WithValue value from the start of each term, and what it proclaims
// after (Proclaim), without a new election. Leader and Observe show it.
// Within a term Info.Rev orders the values, and Observe never reports an
// older one after a newer. TermOf gives leader-only work the term behind
// its context, token included, to fence what it writes.
//
// # Partitions
//
// A Partition (NewPartition) spreads n shards of one named job over the
// processes that join it. Each shard is an election of its own
// ("NAME#i"). So at most one member holds a shard's lease at a time, and
// each term has its own fencing token (TermOf). Members agree on who
// should own which shard by computing the same assignment from their
// member statuses (balanced by weight, moving the fewest shards a change
// of members allows). An owner hands a shard over once its assigned owner
// waits for it, and Run cancels a shard's context before its lease is
// released (context.Cause says why: ErrShardMoved, ErrLeadershipLost,
// or Run's end). So a member that joins gets its share within about one
// heartbeat, without waiting for anyone's lease to expire. Resign and
// Close leave the same way, releasing each shard once its function has
// returned. Observe (and View) report each shard's owner and token, and
// the live members with their weights, as the members last reported them.
//
// An operator steers both from outside with package leader/operator:
// it drains a Partition member, or asks a leader to hand over, by a
// record in the member store that the members read at each heartbeat.
package leader
