package dsync

import (
	"log/slog"

	"github.com/go-dsync/dsync/dsync/driver"
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
// the container's. ClientWithHints("", "") turns direct hints off,
// default included.
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
// Default: on loopback, where the store reports that it is reached over
// loopback (driver.LoopbackReporter: the MongoDB driver does when every
// server of the deployment is, and it is no sharded cluster), as if
// ClientWithHints(DefaultHintsListen, "") were given; otherwise off. On
// loopback, every process that uses the store shares this one's network
// namespace: hints need no address, and open no port to the outside.
// Elsewhere, a library that opens a port its user did not ask for
// surprises people (and their firewalls), and the address to advertise
// depends on the network. The store is asked once it has been prepared,
// as the Client first opens a session; a store reached through a tunnel
// from several machines (ssh -L, kubectl port-forward) looks local to
// each: turn hints off there. The store must be a driver.PeerStore (the
// MongoDB and memory drivers are); NewClient fails otherwise when hints
// are asked for, and when an address is malformed. If the Client cannot
// listen, it logs why and waits without hints.
func ClientWithHints(listen, advertise string) ClientOption {
	return func(c *clientConfig) error {
		if listen == "" && advertise == "" {
			c.hints, c.hintsOff = nil, true
			return nil
		}
		c.hints, c.hintsOff = &hint.Config{Listen: listen, Advertise: advertise}, false
		return nil
	}
}

// DefaultHintsListen is where a Client listens for direct hints when the
// store is reached over loopback and no ClientWithHints was given.
const DefaultHintsListen = "127.0.0.1:0"

// hintConfig completes the hint transport's configuration with the
// Client's logger.
func (c *clientConfig) hintConfig(logger *slog.Logger) hint.Config {
	h := *c.hints
	h.Logger = logger
	return h
}

// loopbackHints returns how a Client given no ClientWithHints settles
// its feed as it first follows it (wakeups.settle): with direct hints
// on loopback over inner, the store's feed (nil if none), if the store
// then reports that it is reached over loopback; else inner alone. Nil
// if the store cannot say so, or carry hints.
func loopbackHints(store driver.Store, inner driver.Feed, cfg clientConfig) func() (driver.Feed, bool, driver.PeerStore) {
	r, ok := store.(driver.LoopbackReporter)
	if _, peers := store.(driver.PeerStore); !ok || !peers {
		return nil
	}
	return func() (driver.Feed, bool, driver.PeerStore) {
		if r.Loopback() {
			hf, err := hint.New(store, inner, hint.Config{Listen: DefaultHintsListen, Logger: cfg.logger})
			if err == nil {
				if cfg.onHints != nil {
					cfg.onHints(hf)
				}
				return hf, true, nil
			}
			cfg.logger.Warn("dsync: direct hints are off: " + err.Error())
		}
		return inner, false, peersOf(store, false)
	}
}
