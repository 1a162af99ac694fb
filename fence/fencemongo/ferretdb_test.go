package fencemongo

import (
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/fakewire"
)

// Fence refuses every release of FerretDB, however its buildInfo says
// so: a FerretDB 2 may mark its reply with a ferretdb document alone, and
// is refused as one that reports a ferretdbVersion is. A server with
// neither is taken for MongoDB, and not refused.
func TestFenceRefusesEachFerretDBReply(t *testing.T) {
	for _, c := range fakewire.Replies {
		t.Run(c.Name, func(t *testing.T) {
			client := fakewire.Connect(t, c.BuildInfo)
			_, err := Fence(testCtx(t, 30*time.Second), client.Database("t").Collection("c"), 1)
			if refused := errors.Is(err, ErrFenceNotAtomic); refused != (c.Release != 0) {
				t.Errorf("Fence: %v; refused as FerretDB: %v, want %v", err, refused, c.Release != 0)
			}
		})
	}
}
