package dsyncmongo

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/fakewire"
)

// TestDetectFerretDBAgrees: whether the store takes its server for
// FerretDB and which release it takes it for are one judgment of the
// buildInfo reply: a FerretDB 2 that marks its reply only with a ferretdb
// document is FerretDB, release 2, as one that reports a ferretdbVersion
// of 2.x is.
func TestDetectFerretDBAgrees(t *testing.T) {
	for _, c := range fakewire.Replies {
		t.Run(c.Name, func(t *testing.T) {
			cfg, err := newConfig(nil)
			if err != nil {
				t.Fatal(err)
			}
			client := fakewire.Connect(t, c.BuildInfo)
			p := &platform{db: client.Database("t"), cfg: cfg}
			ferret, release, err := p.detectFerretDB(testCtx(t, 30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if ferret != (c.Release != 0) || release != c.Release {
				t.Errorf("detectFerretDB = FerretDB %v, release %d; want FerretDB %v, release %d", ferret, release, c.Release != 0, c.Release)
			}
		})
	}
}
