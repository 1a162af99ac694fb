//go:build unix

package main

import (
	"fmt"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// The command's Clients and stores, as the global flags set them.

// hintsOff is the --hints that turns direct hints off, the default on
// loopback included.
const hintsOff = "off"

// lockClient returns the command's one dsync.Client, over a dsyncmongo
// store on db with the global flags' lock collection, and that store:
// the Client's lease (of ttl; 0: dsync's default) is shared by the
// command's locks and its election. extra adds Client options, such as
// a poll interval. Closing the Client closes the store.
func (g *globals) lockClient(db *mongo.Database, logger *slog.Logger, ttl time.Duration, extra ...dsync.ClientOption) (*dsync.Client, *dsyncmongo.Store, error) {
	store, err := dsyncmongo.NewStore(db, dsyncmongo.WithCollection(g.collection), dsyncmongo.WithLogger(logger))
	if err != nil {
		return nil, nil, err
	}
	c, err := dsync.NewClient(store, append(g.clientOptions(logger, ttl), extra...)...)
	if err != nil {
		return nil, nil, err
	}
	return c, store, nil
}

// clientOptions are the options of the command's Client (lockClient):
// wake-ups and hints as the flags say, logger, and a lease of ttl (0:
// dsync's default).
func (g *globals) clientOptions(logger *slog.Logger, ttl time.Duration) []dsync.ClientOption {
	opts := []dsync.ClientOption{dsync.ClientWithWakeups(g.wakeups), dsync.ClientWithLogger(logger)}
	if ttl > 0 {
		opts = append(opts, dsync.ClientWithTTL(ttl))
	}
	if g.outageGraceSet {
		opts = append(opts, dsync.ClientWithOutageGrace(g.outageGrace))
	}
	switch g.hints {
	case "":
	case hintsOff:
		opts = append(opts, dsync.ClientWithHints("", ""))
	default:
		opts = append(opts, dsync.ClientWithHints(g.hints, g.hintsAdvertise))
	}
	return opts
}

// memberStore returns the member store of the command's elections, beside
// store: members go in --members.
//
// --elections names the collection where releases before this one kept
// the leases: a candidate checks it before campaigning, so that it does
// not lead beside a candidate of an older release that still runs there
// (leadermongo's Preflight). A command line written for an older release
// that moved the leases with --elections so keeps checking the right
// collection.
func (g *globals) memberStore(store *dsyncmongo.Store) (*leadermongo.Store, error) {
	return leadermongo.NewStore(store,
		leadermongo.WithMembersCollection(g.members),
		leadermongo.WithLegacyCollection(g.elections))
}

// outageGraceFlag is --outage-grace: it records that the flag was given,
// so that without it the Client keeps the library's default grace, which
// fits itself to the store (dsync.ClientWithOutageGrace).
type outageGraceFlag struct{ g *globals }

func (f outageGraceFlag) String() string {
	if f.g == nil || !f.g.outageGraceSet {
		return ""
	}
	return f.g.outageGrace.String()
}

func (f outageGraceFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("must not be negative, got %v", d)
	}
	f.g.outageGrace, f.g.outageGraceSet = d, true
	return nil
}
