package dsync

import (
	"log/slog"

	"github.com/go-dsync/dsync/dsync/hint"
)

// ClientWithHints makes the Client wake waiters of other processes with
// direct hints (package dsync/hint), besides the store's feed: it listens
// for hints on listen, a UDP host:port (port 0: any free port), and
// records advertise, the host:port at which the other processes reach it
// (port 0: the port listened on), in the store. Empty, advertise is
// listen with the port listened on; then listen must name a host (not
// 0.0.0.0 or ::). Behind NAT, in a container or a Kubernetes pod, listen
// on the pod's or container's address and advertise the address the
// others see: the pod's IP, or the host's address and the port mapped to
// the container's.
//
// A release then wakes the next waiter in another process in about a
// network round trip, where the store's feed takes as long as the store
// delivers events (FerretDB: 10-25 ms) and a store without one, a poll
// (up to ClientWithPollInterval). Hints are authenticated under a key
// kept in the store, and only ever hints: a waiter confirms its turn in
// the store (one read of a run where the store reads runs, as MongoDB;
// otherwise two, the end marker and its own claim read back), and where
// hints cannot get through (a firewall between the
// processes), waiting works as without them, through the store's feed
// and polling. On a store without a feed (or with ClientWithWakeups(false)),
// waiters still poll, and a hint wakes them sooner. While hints reach
// the process, it does not read the store's feed (which costs the store
// a command every few seconds, and FerretDB a query every 10 ms), and
// its waiters rely on the Held hints of the claims' owners: a hint lost
// costs a waiter at most the poll interval. Every process of a store
// should then take hints: one without them that waits behind a process
// hints reach learns of its turn at its own looks, every poll interval
// (wake_mixed.go). docs/operations.md
// ("Direct hints") says what to open in a firewall.
//
// Default: off. A library that opens a port its user did not ask for
// surprises people (and their firewalls); every process of a store must
// be able to reach the others' advertised addresses for hints to help.
// The store must be a driver.PeerStore (the MongoDB and memory drivers
// are); NewClient fails otherwise, and when an address is malformed. If
// the Client cannot listen, it logs why and waits without hints.
func ClientWithHints(listen, advertise string) ClientOption {
	return func(c *clientConfig) error {
		c.hints = &hint.Config{Listen: listen, Advertise: advertise}
		return nil
	}
}

// hintConfig completes the hint transport's configuration with the
// Client's logger.
func (c *clientConfig) hintConfig(logger *slog.Logger) hint.Config {
	h := *c.hints
	h.Logger = logger
	return h
}
