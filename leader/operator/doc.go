// Package operator steers leader's elections and Partitions from outside.
// Programs that only campaign, lead or run shards do not need it.
//
// It drains a Partition member (Drain), or asks a leader to hand over
// (RequestTransfer). Each is a Directive, a record it inserts beside the
// members' status, never into a member's own status, which only its
// member writes. A member store that keeps them serves Directives
// (leadermongo's Store, leadertest's MemoryMembers). The members of an
// election or Partition read them at each heartbeat and act on them. LockKey names the lock whose holder leads, for
// readers of the lock store (dsync status).
//
// # Guarantees
//
// Directives are never updated, so a directive that lands late, or twice,
// cannot undo a later one (see Directive). Drains are never deleted.
// Transfer requests of a term that has ended may be deleted
// (TransferRequests.PruneTransferRequests): such a request is ignored
// anyway, so deleting it, or its landing again after the delete, changes
// nothing.
package operator
