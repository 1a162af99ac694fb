// Package statuspage shows a dsync store to people: a live, read-only web
// page, and the Reader it reads through. The page decides nothing about
// who may see it: do not mount it without authentication of your own.
//
// The page shows:
//
//   - per key, who holds it (process, host, pid), its fencing token, how
//     long it has been held, when its lease ends in the store's time and
//     the queue behind it;
//   - the readers of an RWMutex, the units of a Semaphore, the Once
//     records;
//   - the elections with their leader, term, value and members;
//   - the shards of each leader.Partition with their owner (host, pid),
//     fencing token and lease;
//   - the sessions operators revoked (dsync revoke): who, when in store
//     time and why, with the revoked session's claims marked;
//   - the holds that stalled (their work reported no progress within its
//     deadline): which key and token, whose and when, those of the last
//     hour marked;
//   - who waits for whom among lock sets (dsync/lockset), and the
//     deadlocks between them broken in the last day.
//
// The page fetches its data every second from a JSON endpoint beside it
// (status.json, the same data). It says plainly when the store cannot be
// read.
//
// The types of this package are the schema of that data, and the only
// one: status.json serves a Snapshot, and `dsync status --json` prints
// the same records one per line (a Record each), with the same names
// and types.
//
// New returns an http.Handler. It only reads, and decides nothing about
// who may see it: a program that mounts it puts it behind its own
// authentication, for example
//
//	mux.Handle("/dsync/", http.StripPrefix("/dsync", statuspage.New(statuspage.Config{Client: c})))
//
// The page's HTML, CSS and JavaScript are embedded in the binary and use
// no framework: nothing is fetched from the internet. `dsync status --web`
// serves the same page from the command line.
//
// # Reading a store
//
// A Reader (NewReader) is what the page, `dsync status` and a program read
// a store through, so that all of them see the same store alike. It reads
// the keys and their queues (List, Queue, HasKey, ListOrder), the sessions
// operators revoked (Revocations), the holds that stalled (Stalls), the
// lock sets' wait notes and deadlock records (SetRecords), and,
// walking the keys (Walk, WalkNamed), whether a Once ran to success
// (dsync.Once.Done), who leads an election (leader.Election.Leader, on a
// watcher that never campaigns), who stands by (leader.MemberStore.Members)
// and the members of a partition drained (Drained). It claims no key.
//
// The contract of its reads:
//
//   - Reading writes nothing: a Reader's reads, and leadermongo's Members,
//     Directives and MembersAndDirectives, create no collection or index,
//     end no claim (not even one whose session expired) and need only
//     MongoDB's read role; a database nothing uses reads as empty, and is
//     left so. Until the Client's first claim, they learn the store's
//     bucket span from its protocol document, and on MongoDB sample the
//     server's clock with hello.
//   - Walk hands each lock and election to a Sink as soon as it is read,
//     in the store's order (a long list streams); an error of the Sink
//     ends the walk and is returned as it is.
//   - Every primitive is told by its key (KindOf): each kind but the
//     Mutex keeps its keys under a prefix of its own.
//   - Each LockState and ElectionState carries Reader.Now as its read
//     ended: the store's time when the caller has it. How long a claim was
//     held or has left is the presenter's to count from it.
//   - A walk asks the store for one key more than Selection.Limit, to
//     tell whether more follow (Listed.More), and says where the next
//     page starts (Listed.Next) only where the store lists in the order
//     of the keys' bytes (OrderBytes); a Selection.After elsewhere is
//     ErrAfterUnsupported.
//   - An election's leader and its lease are two reads; when a term
//     begins or ends between them they disagree, and are read again, a
//     few times.
//   - The shards of a leader.Partition are elections like any other to
//     the Reader; Stream and ShardSet gather them by partition.
//
// Compact, the one write here, is an operator's, and not a Reader's.
package statuspage
