package dsync

import (
	"strings"
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// panicOf returns what f panics with, or nil.
func panicOf(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestHookSettingsAreAsserted: clienthook holds a store and the settings
// of a driver type as an any; the wrapper clienthook.Wrap returns carries
// them to the Client, which applies a setting of the type the doc names
// and panics, naming the field, at any other, as Wrap does at a store
// held as another type than driver.Store.
func TestHookSettingsAreAsserted(t *testing.T) {
	wrapped := 0
	store := clienthook.Wrap[driver.Store](memory.New(), clienthook.Settings{WrapStore: func(s driver.Store) driver.Store {
		wrapped++
		return s
	}})
	c, err := NewClient(store)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if wrapped != 1 {
		t.Fatalf("WrapStore called %d times, want 1", wrapped)
	}

	for field, s := range map[string]clienthook.Settings{
		"WrapStore": {WrapStore: func(driver.Store) {}},
		"Hints":     {Hints: func() {}},
	} {
		v := panicOf(func() { _, _ = NewClient(clienthook.Wrap[driver.Store](memory.New(), s)) })
		if msg, _ := v.(string); !strings.Contains(msg, "clienthook.Settings."+field) {
			t.Errorf("a %s of another type: NewClient panicked with %v, want a message naming the field", field, v)
		}
	}

	v := panicOf(func() { clienthook.Wrap(memory.New(), clienthook.Settings{}) })
	if msg, _ := v.(string); !strings.Contains(msg, "driver.Store") {
		t.Errorf("Wrap of a *memory.Store: panicked with %v, want a message naming driver.Store", v)
	}
}
