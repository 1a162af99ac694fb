package dsyncmongo

import (
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestNewStoreRefusesAnInvalidDatabaseName: a database name MongoDB
// refuses is refused by NewStore, before any I/O, with
// ErrInvalidDatabase and the name and character at fault; the names
// MongoDB takes are taken. (Before, NewStore took "a.b", and the first
// call failed to create the index, as if for want of a privilege.)
func TestNewStoreRefusesAnInvalidDatabaseName(t *testing.T) {
	// No server: NewStore does no I/O, and Connect dials lazily.
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(t.Context())
	for _, tc := range []struct{ name, says string }{
		{"a.b", `"a.b": it contains "."`},
		{"my db", `"my db": it contains " "`},
		{"a/b", `it contains "/"`},
		{`a\b`, `it contains "\\"`},
		{`a"b`, `it contains "\""`},
		{"a$b", `it contains "$"`},
		{"a\x00b", `it contains "\x00"`},
		{"", "the name is empty"},
		{strings.Repeat("d", 64), "64 bytes; MongoDB allows at most 63"},
	} {
		s, err := NewStore(client.Database(tc.name))
		if s != nil || !errors.Is(err, ErrInvalidDatabase) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("NewStore of database %q: %v, %v; want ErrInvalidDatabase saying %s", tc.name, s, err, tc.says)
		}
		if err := CheckDatabaseName(tc.name); !errors.Is(err, ErrInvalidDatabase) {
			t.Errorf("CheckDatabaseName(%q) = %v, want ErrInvalidDatabase", tc.name, err)
		}
	}
	for _, name := range []string{DefaultDatabase, "app", "t_x-1", strings.Repeat("d", 63), "données"} {
		s, err := NewStore(client.Database(name))
		if err != nil {
			t.Errorf("NewStore of database %q: %v, want a store", name, err)
			continue
		}
		_ = s.Close()
	}
}
