package dsync_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// TestOptionsFitOnlyTheirPrimitives: each constructor takes the options
// that fit its primitive (the table of Option's doc, row by row) and
// refuses the others with an error naming the option and the primitive;
// a nil option is refused by every one.
func TestOptionsFitOnlyTheirPrimitives(t *testing.T) {
	c := dsync.NewMemClient()
	defer c.Close()
	makers := []struct {
		prim string
		make func(opt dsync.Option) error
	}{
		{"Mutex", func(o dsync.Option) error { _, err := dsync.NewMutex(c.Client, "k", o); return err }},
		{"RWMutex", func(o dsync.Option) error { _, err := dsync.NewRWMutex(c.Client, "k", o); return err }},
		{"Semaphore", func(o dsync.Option) error { _, err := dsync.NewSemaphore(c.Client, "k", 2, o); return err }},
		{"Once", func(o dsync.Option) error { _, err := dsync.NewOnce(c.Client, "k", o); return err }},
	}
	for _, tc := range []struct {
		name string
		opt  dsync.Option
		fits []string
	}{
		{"WithProgressDeadline", dsync.WithProgressDeadline(time.Second), []string{"Mutex", "RWMutex", "Semaphore"}},
		{"WithNamespace", dsync.WithNamespace("x"), []string{"Mutex"}},
		{"WithReadLinger", dsync.WithReadLinger(time.Second), []string{"RWMutex"}},
		{"WithForgetAfter", dsync.WithForgetAfter(time.Hour), []string{"Once"}},
		{"nil option", nil, nil},
	} {
		for _, m := range makers {
			t.Run(tc.name+"/"+m.prim, func(t *testing.T) {
				err := m.make(tc.opt)
				fits := false
				for _, p := range tc.fits {
					fits = fits || p == m.prim
				}
				switch {
				case fits && err != nil:
					t.Fatalf("New%s(%s) = %v, want no error", m.prim, tc.name, err)
				case !fits && err == nil:
					t.Fatalf("New%s(%s) took an option it has no use for", m.prim, tc.name)
				case !fits && tc.opt != nil && (!strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), "not of a "+m.prim)):
					t.Fatalf("New%s(%s) = %q, want an error naming the option and the primitive", m.prim, tc.name, err)
				case !fits && tc.opt == nil && !strings.Contains(err.Error(), "nil option"):
					t.Fatalf("New%s(nil) = %q, want a nil option's error", m.prim, err)
				}
			})
		}
	}
}
