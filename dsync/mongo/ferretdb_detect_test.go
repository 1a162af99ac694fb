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
			single := topologySingle // (the fake server answers no topology probe)
			cfg.test = &testHooks{topology: &single}
			p := &platform{db: client.Database("t"), cfg: cfg}
			if err := p.probe(testCtx(t, 30*time.Second)); err != nil {
				t.Fatal(err)
			}
			ferret, release := p.isFerret(), p.ferretRelease
			if ferret != (c.Release != 0) || release != c.Release {
				t.Errorf("probe: FerretDB %v, release %d; want FerretDB %v, release %d", ferret, release, c.Release != 0, c.Release)
			}
		})
	}
}
