// Package statuspage serves a live, read-only web page of a dsync store.
// It decides nothing about who may see it: do not mount it without
// authentication of your own.
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
//     hour marked.
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
package statuspage
