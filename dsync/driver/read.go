package driver

import "context"

// ReadPreparer is a Store that can be made ready to serve reads without
// writing or creating anything, so that a Client's reads (dsync's List,
// Queue, HasKey, ListOrder) work with a user that may only read, and
// leave a database nothing has used as empty as they found it. A Store
// that is not one is prepared with Prepare before a read.
type ReadPreparer interface {
	// PrepareRead makes ServerTime, KeyOrder, Get, GetSession, HasKey
	// and ListKeys valid, as Prepare does, but sends only reads: it
	// creates no collection or index and writes no document. Reads of a
	// store whose collections do not exist find nothing there. It is
	// called again after it failed, and must be cheap once it (or
	// Prepare) has succeeded.
	PrepareRead(ctx context.Context) error
}
