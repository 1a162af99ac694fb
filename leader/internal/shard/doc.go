// Package shard decides which member of a partitioned election owns
// which shard: the assignment a sharded singleton (issue 45) is built on,
// kept apart from the election so that its properties are tested alone.
//
// Assign is a pure function of the shard count, the live members (ID and
// weight) and who owns each shard now. Every member that sees the same
// members and owners computes the same assignment, whatever the order it
// lists them in, so members agree without talking to each other; while
// their views differ they may disagree, which costs a handover, never
// safety: a shard is a lock, and only one member holds it at a time.
//
// What it promises, for members of positive weight:
//
//   - Balance: member m gets floor or ceil of n·w(m)/W shards (W the sum
//     of the weights); at equal weights no member has more than one shard
//     more than another.
//   - Stability: a shard stays with its owner while that owner is live
//     and within its share, so a change of members moves the fewest
//     shards balance allows: the shards of members that left or had none,
//     and each remaining member's shards beyond its new share (a join of
//     the k-th member moves at most ceil(n/k) shards).
//   - Spread: a shard that moves goes to the member with room that
//     ranks it highest by weighted rendezvous hashing, so which member
//     takes which shard depends on neither the shard numbers nor the
//     members' order: members do not own runs of neighbouring shards.
package shard
