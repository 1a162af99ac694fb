package driver

import "context"

// ReadPreparer readies a store for reads without writing or creating
// anything (Roles.Reads). With it, a Client's reads (dsync's List, Queue,
// HasKey, ListOrder) work with a user that may only read. They also leave a
// database nothing has used as empty as they found it. A store without it
// is prepared with Prepare before a read.
type ReadPreparer interface {
	// PrepareRead makes ReadServerTime, KeyOrder, Get, GetSession,
	// HasKey and ListKeys valid, as Prepare does (but not ServerTime,
	// which only Prepare makes valid), and sends only reads: it
	// creates no collection or index and writes no document. Reads of a
	// store whose collections do not exist find nothing there. It is
	// called again after it failed, and must be cheap once it (or
	// Prepare) has succeeded.
	PrepareRead(ctx context.Context) error
	// ReadServerTime returns an interval that contains the store's
	// clock now, for reads: ServerTime's once Prepare has succeeded, and
	// before that one PrepareRead sampled without writing (on MongoDB
	// with hello, whose time behind a mongos is the router's clock, not
	// the clock that orders the store's writes). It is for reports of
	// what a read found; nothing that writes may judge expiry with it.
	// The zero Interval before either succeeded.
	ReadServerTime() Interval
}
