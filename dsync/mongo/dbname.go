package dsyncmongo

import (
	"fmt"
	"strings"
)

// maxDatabaseName is MongoDB's limit on a database name: fewer than 64
// bytes.
const maxDatabaseName = 63

// databaseNameForbidden are the characters MongoDB refuses in a database
// name on every platform (a Windows server refuses *<>:|? too).
const databaseNameForbidden = "/\\. \"$\x00"

// CheckDatabaseName returns nil if MongoDB accepts name as a database's
// name. Otherwise it returns an error wrapping ErrInvalidDatabase that says
// why: the name is empty, has 64 bytes or more, or contains one of / \ . "
// $, a space or a NUL. NewStore checks its database's name so; a server may
// refuse more (FerretDB, or MongoDB on Windows), and says so itself.
func CheckDatabaseName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidDatabase)
	case len(name) > maxDatabaseName:
		return fmt.Errorf("%w %q: %d bytes; MongoDB allows at most %d", ErrInvalidDatabase, name, len(name), maxDatabaseName)
	}
	if i := strings.IndexAny(name, databaseNameForbidden); i >= 0 {
		return fmt.Errorf("%w %q: it contains %q; MongoDB allows none of / \\ . \" $, a space or NUL in a database name",
			ErrInvalidDatabase, name, name[i:i+1])
	}
	return nil
}
