package dsync

import (
	"errors"
	"testing"
)

// TestTypedNilOptionIsAnError: an option type's nil function inside an
// option (not nil as an interface) is refused as a nil option is, with
// an error from the constructor rather than a panic.
func TestTypedNilOptionIsAnError(t *testing.T) {
	c := NewMemClient()
	defer c.Close()
	for _, tc := range []struct {
		name string
		make func() error
	}{
		{"NewMutex(keyOption(nil))", func() error { _, err := NewMutex(c.Client, "k", keyOption(nil)); return err }},
		{"NewMutex(tryOption(nil))", func() error { _, err := NewMutex(c.Client, "k", tryOption(nil)); return err }},
		{"NewMutex(mutexOption(nil))", func() error { _, err := NewMutex(c.Client, "k", mutexOption(nil)); return err }},
		{"NewRWMutex(keyOption(nil))", func() error { _, err := NewRWMutex(c.Client, "k", keyOption(nil)); return err }},
		{"NewRWMutex(tryOption(nil))", func() error { _, err := NewRWMutex(c.Client, "k", tryOption(nil)); return err }},
		{"NewRWMutex(rwMutexOption(nil))", func() error { _, err := NewRWMutex(c.Client, "k", rwMutexOption(nil)); return err }},
		{"NewSemaphore(keyOption(nil))", func() error { _, err := NewSemaphore(c.Client, "k", 1, keyOption(nil)); return err }},
		{"NewSemaphore(tryOption(nil))", func() error { _, err := NewSemaphore(c.Client, "k", 1, tryOption(nil)); return err }},
		{"NewOnce(keyOption(nil))", func() error { _, err := NewOnce(c.Client, "k", keyOption(nil)); return err }},
		{"NewOnce(onceOption(nil))", func() error { _, err := NewOnce(c.Client, "k", onceOption(nil)); return err }},
		{"NewOnce(nil)", func() error { _, err := NewOnce(c.Client, "k", nil); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.make(); !errors.Is(err, errNilOption) {
				t.Fatalf("error %v, want %v", err, errNilOption)
			}
		})
	}
}
