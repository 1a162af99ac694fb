package driver

import (
	"context"
	"iter"
	"strconv"
)

// KeyDirectory is the store's directory of keys (Roles.Directory). It holds
// the keys processes have claimed, which statuspage.Reader.List reads.
type KeyDirectory interface {
	// PutKeys records keys in the directory, in one request where the
	// store can (a process that claims thousands of new keys records them
	// in batches). Recording a key already recorded, or twice in one
	// call, is not an error, and changes nothing. On an error, any of the
	// keys may have been recorded: the caller puts them all again. The
	// directory is apart from the keys' documents: a key is listed
	// whether or not the store holds documents of it, and entries are
	// never removed but by an operator.
	PutKeys(ctx context.Context, keys []string) error
	// HasKey reports whether key is recorded in the directory.
	HasKey(ctx context.Context, key string) (bool, error)
	// ListKeys streams the keys of the directory that q selects, each
	// once, in the store's order (KeyOrder), reading them from the store
	// a batch at a time as the caller goes on, so that a listing's memory
	// and its first key's latency do not grow with the directory. A key
	// recorded while a listing runs may be listed or not. An error ends
	// the listing: it is yielded with an empty key. A query the store
	// cannot serve (KeyQuery.After on a store of OrderFirstUse) yields an
	// error wrapping ErrAfterUnsupported, before any I/O.
	ListKeys(ctx context.Context, q KeyQuery) iter.Seq2[string, error]
	// KeyOrder is the order in which ListKeys lists keys. Valid once
	// the store was prepared (Store.Prepare, or Roles.Reads' PrepareRead):
	// a store may learn it from the server.
	KeyOrder() KeyOrder
}

// KeyQuery selects the keys of a listing (KeyDirectory.ListKeys).
type KeyQuery struct {
	// Prefix: only keys that begin with it; "" selects every key.
	Prefix string
	// After: only keys that come after it in the store's order; "" starts
	// at the first key. Only a store of OrderBytes can resume a listing
	// after a key (it need not be recorded itself).
	After string
	// Limit: at most this many keys; 0 lists every key selected. It must
	// not be negative.
	Limit int
}

// KeyOrder is the order in which a store lists its keys.
type KeyOrder int

const (
	// OrderBytes lists keys in increasing order of their bytes (as
	// bytes.Compare orders them). It can resume after any key.
	OrderBytes KeyOrder = iota + 1
	// OrderFirstUse lists keys in the order they were first recorded
	// (PutKeys). It is a stable order, since entries are never updated
	// or removed, in which keys recorded later come later. A store
	// lists them in this order when reading any other order would cost
	// it a read of its whole directory (FerretDB). It cannot resume
	// after a key: a query with After fails with ErrAfterUnsupported.
	OrderFirstUse
)

func (o KeyOrder) String() string {
	switch o {
	case OrderBytes:
		return "bytes"
	case OrderFirstUse:
		return "first use"
	}
	return "KeyOrder(" + strconv.Itoa(int(o)) + ")"
}
