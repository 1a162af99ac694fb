package driver

import (
	"context"
	"time"
)

// Peer is a process that takes direct hints (package dsync/hint). It says
// where other processes can send them, and until when (store time) the
// record holds. A process records itself again before its record lapses.
type Peer struct {
	ID        string // unique per process (per hint transport)
	Addr      string // host:port, as other processes reach it
	ExpiresAt time.Time
}

// PeerStore is the role of a store that can carry direct hints between
// processes (Roles.Peers). It provides the shared key that authenticates
// hints, and where each process can be reached. Only processes that can
// read the store can read the key, so only they can send hints that other
// processes accept.
type PeerStore interface {
	// HintKey returns the store's hint key: key, recorded with one insert,
	// if the store had none; else the one recorded, unchanged. Of many
	// processes that call it at once with different keys, all get the
	// same one.
	HintKey(ctx context.Context, key []byte) ([]byte, error)
	// PutPeer records p, replacing any record of p.ID. A record may be
	// deleted once it has expired. A put that lands late may bring back
	// an older record: harmless, since a record only says where to send
	// hints, and lapses at its expiry.
	PutPeer(ctx context.Context, p Peer) error
	// Peers lists the peers whose records expire after after.
	Peers(ctx context.Context, after time.Time) ([]Peer, error)
}

// LoopbackReporter is what a store that can tell how this process
// reaches it provides (Roles.Loopback). dsync turns direct hints on by
// default, on loopback, for a store that reports true (see
// dsync.ClientWithHints): there hints need no configuration and open
// nothing to the outside. They reach only the processes of this network
// namespace: processes elsewhere that use the same store (through
// another address of its server) take none of them.
type LoopbackReporter interface {
	// Loopback reports whether, as far as the store can tell, every
	// server of its deployment is reached over loopback by this
	// process's own connections, and none is a front end that processes
	// on other machines reach over their own loopback (a mongos beside
	// each application; FerretDB beside each, over one PostgreSQL). It
	// prepares the store if it is not (Store.Prepare), and may ask the
	// deployment, once: dsync asks it in the background, off the path of
	// any Lock. False when the store cannot tell, or ctx ends first (a
	// later call asks again).
	Loopback(ctx context.Context) bool
}
