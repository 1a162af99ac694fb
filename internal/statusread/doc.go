// Package statusread reads a dsync store for people: the one reader of
// `dsync status` (cmd/dsync) and of the live status page (package
// statuspage), so that both show the same store alike. Each of them only
// presents what it is handed: a table or JSON lines, a Snapshot.
//
// What it reads, all of it through the library's public API and nothing
// of how the library stores it: the keys and their queues
// (dsync.Client.List, Queue, HasKey, ListOrder), whether a Once ran to
// success (dsync.Once.Done), who leads an election
// (leader.Election.Leader, on a watcher that never campaigns) and who
// stands by (leader.MemberStore.Members), the members of a partition
// drained (operator.Directives, by Drained), the sessions operators revoked
// (dsync.Client.Revocations) and the holds that stalled
// (dsync.Client.Stalls). It claims no key.
//
// The contract with its callers:
//
//   - Each lock and election is handed to a Sink as soon as it is read,
//     in the store's order (a long list streams); an error of the Sink
//     ends the read and is returned as it is.
//   - Every primitive is told by its key (KindOf): each kind but the
//     Mutex keeps its keys under a prefix of its own.
//   - Each Lock and Election carries Reader.Now as its read ended: the
//     store's time when the caller has it. How long a claim was held or
//     has left is the presenter's to count from it.
//   - A list asks the store for one key more than Selection.Limit, to
//     tell whether more follow (Listed.More), and says where the next
//     page starts (Listed.Next) only where the store lists in the order
//     of the keys' bytes (dsync.OrderBytes); a Selection.After elsewhere
//     is dsync.ErrAfterUnsupported.
//   - An election's leader and its lease are two reads; when a term
//     begins or ends between them they disagree, and are read again, a
//     few times (Election).
//   - Reading writes nothing: the Client's List, Queue, HasKey,
//     ListOrder, Revocations and Stalls and leadermongo's Members,
//     Directives and MembersAndDirectives create
//     no collection or index and need only MongoDB's read role; a
//     database nothing uses reads as empty, and is left so.
//
// The shards of a leader.Partition are elections like any other here;
// the presenters gather them with internal/partitions.
package statusread
