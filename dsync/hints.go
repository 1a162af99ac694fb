package dsync

import (
	"context"
	"log/slog"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/dsync/internal/wake"
)

// ClientWithHints makes the Client wake waiters of other processes with
// direct hints. Hints (package dsync/hint) come besides the store's feed.
// The Client listens for hints on listen, a UDP host:port (port 0: any free
// port). It records advertise in the store: the host:port at which the
// other processes reach it (port 0: the port listened on). Empty, advertise
// is listen with the port listened on; then listen must name a host (not
// 0.0.0.0 or ::). Behind NAT, in a container or a Kubernetes pod, listen on
// the pod's or container's address and advertise the address the others
// see: the pod's IP, or the host's address and the port mapped to the
// container's. ClientWithHints("", "") turns direct hints off, default
// included.
//
// A release then wakes the next waiter in another process in about a
// network round trip, where the store's feed takes as long as the store
// delivers events (FerretDB: 10-25 ms) and a store without one, a poll
// (up to ClientWithPollInterval). Hints are authenticated under a key
// kept in the store, and only ever hints: a waiter confirms its turn in
// the store (one read of a run where the store reads runs, as MongoDB;
// otherwise two, the end marker and its own claim read back). Where
// hints cannot get through (a firewall between the processes), waiters
// still learn of their turn through the store's feed and polling, but
// one that hears no Held hint from its claim's owner looks every poll
// interval (a read of the store each time), where without hints it
// would rely on the store's feed and look every safety poll. On a store
// without a feed (or with ClientWithWakeups(false)), waiters still
// poll, and a hint wakes them sooner. While hints reach
// the process, it does not read the store's feed (which costs the store
// a command every few seconds, and FerretDB a query every 10 ms), and
// its waiters rely on the Held hints of the claims' owners: a hint lost
// costs a waiter at most the poll interval. Every process of a store
// should then take hints: one without them that waits behind a process
// hints reach learns of its turn at its own looks, every poll interval
// (dsync/internal/wake's mixed.go). docs/operations.md
// ("Direct hints") says what to open in a firewall.
//
// Default: on loopback, where the store reports that it is reached over
// loopback (driver.Roles.Loopback: the MongoDB driver does when every
// server of the deployment is, through this process's own connection
// on Linux, and it is neither a sharded cluster nor FerretDB on
// PostgreSQL), as if ClientWithHints(DefaultHintsListen, "") were
// given, and the Client says so once, at Info; otherwise off. On
// loopback, hints need no address and open no port to the outside, and
// they reach only the processes of this network namespace (this
// machine, container or pod). Processes elsewhere that use the same
// store neither send these hints nor take them: those on other machines
// that reach a server of this machine through its network address, or
// through a tunnel (ssh -L, kubectl port-forward), which looks local to
// each machine. A handoff between the processes here and those then
// waits for the waiter's next look, up to the poll interval, and each
// waiter behind a claim of the other group looks every poll interval:
// turn hints off in every process there with ClientWithHints("", ""),
// or give every process hints that reach the others. Elsewhere, a
// library that opens a port its user did not ask for surprises people
// (and their firewalls), and the address to advertise depends on the
// network. The store is asked, and hints set up, off the path of the
// Client's first Lock: in the background, once its first claim ends, its
// first waiter starts to wait, or a second after its first session
// opened, whichever comes first. Until then its waiters poll and it
// announces nothing: a first Lock only ever loses speed for it, never
// safety (waiters look at the store anyway); a process that locks once,
// uncontended, sends the commands it would without hints, and one that
// closes at once sends none for them. The store must record peers
// (driver.Roles.Peers: the MongoDB and memory drivers do); NewClient
// fails otherwise when hints are asked for, and when an address is
// malformed. If the Client cannot
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

// DefaultHintsListen is where a Client listens for direct hints by default.
// That default applies when the store is reached over loopback and no
// ClientWithHints was given.
const DefaultHintsListen = "127.0.0.1:0"

// hintConfig completes the hint transport's configuration with the
// Client's logger.
func (c *clientConfig) hintConfig(logger *slog.Logger) hint.Config {
	h := *c.hints
	h.Logger = logger
	return h
}

// loopbackHints returns how a Client given no ClientWithHints settles
// its feed: with direct hints on loopback (DefaultHintsListen) over inner,
// the store's feed, if the store reports that it is reached over loopback
// (dsync/internal/wake's loopback.go says how and when); nil if the store
// cannot say so, or carry hints.
func loopbackHints(store driver.Store, inner driver.Feed, cfg clientConfig) func(context.Context) wake.Settled {
	return wake.LoopbackHints(store, inner, DefaultHintsListen, cfg.logger, cfg.test.hints, cfg.test.settledNow)
}
