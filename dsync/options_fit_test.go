package dsync_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// Each option is of the types of the primitives it fits (the table of
// KeyOption's doc): a change that drops one of them fails to compile here.
var (
	_ dsync.KeyOption = dsync.WithLogger(slog.Default())
	_ dsync.KeyOption = dsync.WithErrorHandler(func(error) {})
	_ dsync.KeyOption = dsync.WithReleaseTimeout(time.Second)
	_ dsync.TryOption = dsync.WithTryTimeout(time.Second)

	_ dsync.MutexOption     = dsync.WithNamespace("x")
	_ dsync.RWMutexOption   = dsync.WithReadLinger(time.Second)
	_ dsync.OnceOption      = dsync.WithForgetAfter(time.Hour)
	_ dsync.MutexOption     = dsync.KeyOption(nil)
	_ dsync.RWMutexOption   = dsync.KeyOption(nil)
	_ dsync.SemaphoreOption = dsync.KeyOption(nil)
	_ dsync.OnceOption      = dsync.KeyOption(nil)
	_ dsync.MutexOption     = dsync.TryOption(nil)
	_ dsync.RWMutexOption   = dsync.TryOption(nil)
	_ dsync.SemaphoreOption = dsync.TryOption(nil)
)

// TestOptionsFitOnlyTheirPrimitives: an option is of no primitive's type
// it does not fit, so that passing it there is a compile error rather
// than one the constructor returns (the table of KeyOption's doc, row by
// row).
func TestOptionsFitOnlyTheirPrimitives(t *testing.T) {
	type fits struct{ mutex, rw, sem, once bool }
	for _, tc := range []struct {
		name string
		opt  any
		fits fits
	}{
		{"WithLogger", dsync.WithLogger(slog.Default()), fits{true, true, true, true}},
		{"WithErrorHandler", dsync.WithErrorHandler(func(error) {}), fits{true, true, true, true}},
		{"WithReleaseTimeout", dsync.WithReleaseTimeout(time.Second), fits{true, true, true, true}},
		{"WithTryTimeout", dsync.WithTryTimeout(time.Second), fits{true, true, true, false}},
		{"WithNamespace", dsync.WithNamespace("x"), fits{true, false, false, false}},
		{"WithReadLinger", dsync.WithReadLinger(time.Second), fits{false, true, false, false}},
		{"WithForgetAfter", dsync.WithForgetAfter(time.Hour), fits{false, false, false, true}},
	} {
		_, mutex := tc.opt.(dsync.MutexOption)
		_, rw := tc.opt.(dsync.RWMutexOption)
		_, sem := tc.opt.(dsync.SemaphoreOption)
		_, once := tc.opt.(dsync.OnceOption)
		if got := (fits{mutex, rw, sem, once}); got != tc.fits {
			t.Errorf("%s fits (Mutex, RWMutex, Semaphore, Once) %v, want %v", tc.name, got, tc.fits)
		}
	}
}
