package dsyncmongo

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Errors the driver returns carry no FerretDB stack frames in their text,
// and still wrap the server's error.
func TestWrapTidiesFerretDBFrames(t *testing.T) {
	server := errors.New("(InternalError) [msg_find.go:344 handler.handleMaxTimeMSError] [collection.go:94 sqlite.(*collection).Query] interrupted (9)")
	err := wrap(context.Background(), "list keys of", "dsync_locks_keys", server)
	if want := `dsyncmongo: list keys of "dsync_locks_keys": (InternalError) interrupted (9)`; err.Error() != want {
		t.Errorf("wrap = %q, want %q", err, want)
	}
	if !errors.Is(err, server) || strings.Contains(err.Error(), ".go:") {
		t.Errorf("wrap = %q: want the server's error wrapped, its frames cut", err)
	}
}
