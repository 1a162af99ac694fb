// Package hint carries dsync's wake-up hints directly between processes,
// over UDP. Users turn it on with dsync.ClientWithHints rather than
// directly; this package is what that option builds.
//
// Hints go beside the store's own feed. A release wakes the next waiter in
// another process in about a network round trip, whatever the store.
// Without hints it waits until the store's feed delivers its event
// (FerretDB re-runs a tailable cursor's query every 10 ms) or until the
// waiter's next poll (stores without capped collections).
//
// A Feed wraps the store's driver.Feed (or none) and is itself a
// driver.Feed: the Client follows it as it would the store's.
//
// Each process that takes hints records in the store where it can be
// reached (the store's driver.Roles.Peers), and reads where the others can.
// A waiter's announcement (driver.Waiting) goes to every process recorded,
// and a process that this one learns of later (its hello, a hint, its
// record) is sent at once the announcements of the last second that no
// owner answered: the owner may start taking hints just after its waiter
// announced.
// The end of a claim (driver.Ended) goes to the processes that announced
// they wait for that claim: those its end can let go, the next holder among
// them. Of those, the ones whose last announcement told they need more ends
// than this one (driver.Event.Need) get it a few milliseconds later. If no
// process announced it waits for that claim, the end goes to those that
// announced they wait for a claim of its key, else to all. A Held (the
// claim has not ended, sent by its owner) goes to those that announced they
// wait for that claim. Every event but Held also goes through the store's
// feed while that is live, as without hints.
//
// Hints first: while hints reach this process, it does not read the store's
// feed. Hints reach it as long as it took one from another process within
// the last 75 s; processes say hello every 30 s and answer hellos.
// Meanwhile its handler is told the feed is down (ErrStoreFeedPaused), a
// store's feed that pauses (driver.Roles.FeedPause) stops reading, and
// events go by hints only. The Client's waiters then rely on Held hints
// rather than on the store's feed.
//
// Hints are authenticated with HMAC-SHA256 under a key kept in the store.
// The key is created once, by an insert, so that processes racing to create
// it agree. Only processes that can read the store can send hints that
// others accept. The MAC covers the receiver's peer ID, so a hint is taken
// only by the process it was sent to. A hint sent more than ten seconds
// from the receiver's estimate of the store's time is dropped. So is one
// seen already (taken, or refused over the rate). Past a rate
// (Config.Rate), hints are dropped too, and a hint played again takes none
// of it.
//
// A hint is only ever a hint. A waiter that a hint wakes confirms its turn
// in the store: one request where the store reads runs of a queue, two
// reads by ID elsewhere (the end marker and its own claim, read back).
// Queues live in the store only. So a hint lost, duplicated, late or forged
// costs at most those reads, or the latency of the path it would have
// saved. Where hints cannot get through (NAT, a firewall), waiters still
// learn of their turn through the store's feed and polling. But a waiter
// that hears no Held hint from its claim's owner looks every poll interval.
package hint
