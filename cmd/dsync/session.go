//go:build unix

package main

import (
	"context"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
)

// A session is what lock, once, elect and the demo's candidates hold
// their keys over: the connection to the server, and the command's one
// dsync.Client on it, whose lease every hold of the command shares.
type session struct {
	conn  *mongo.Client
	locks *dsync.Client
	store *dsyncmongo.Store // under locks; elections keep their members beside it

	// keepClient, keepConn: close leaves the Client, the connection, as
	// they are (see abandon).
	keepClient, keepConn bool
}

// errClient is a failure to make the Client, after the connection was
// made: told apart from a failure to connect, which a signal may have
// caused (see runner.open).
type errClient struct{ err error }

func (e errClient) Error() string { return e.err.Error() }
func (e errClient) Unwrap() error { return e.err }

// openSession connects (see globals.connect) and makes the command's
// Client, of lease ttl (0: dsync's default), with extra Client options.
// A failure to make the Client is an errClient.
func (g *globals) openSession(ctx context.Context, logger *slog.Logger, ttl time.Duration, extra ...dsync.ClientOption) (*session, error) {
	conn, db, err := g.connect(ctx)
	if err != nil {
		return nil, err
	}
	locks, store, err := g.lockClient(db, logger, ttl, extra...)
	if err != nil {
		disconnect(conn)
		return nil, errClient{err}
	}
	return &session{conn: conn, locks: locks, store: store}, nil
}

// close closes the Client, which ends the holds it still has, then the
// connection, ending the driver's sessions on the server; each unless
// abandoned.
func (s *session) close() {
	if !s.keepClient {
		s.locks.Close()
	}
	if !s.keepConn {
		disconnect(s.conn)
	}
}

// abandon has close leave the Client and the connection as they are: the
// lease was lost, which ended it, so Close has nothing to end, and what
// else both send is best effort, for a server that is probably gone.
func (s *session) abandon() { s.keepClient, s.keepConn = true, true }

// abandonConn has close leave only the connection as it is, and close
// the Client: what dsync once does after its lock was lost (dsync lock
// abandons both).
func (s *session) abandonConn() { s.keepConn = true }
