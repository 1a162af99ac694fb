package event_test

import (
	"context"
	"fmt"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/event"
)

// An Observer is told of each hold by the primitive's Kind: here one
// Mutex hold and one read hold of an RWMutex.
func ExampleObserver() {
	held := map[event.Kind]int{}
	c, err := dsync.NewClient(memory.New(), dsync.ClientWithObserver(event.Observer{
		Released: func(h event.Held) { held[h.Kind]++ },
	}))
	if err != nil {
		panic(err)
	}
	m, _ := dsync.NewMutex(c, "report")
	rw, _ := dsync.NewRWMutex(c, "config")
	if err := m.LockContext(context.Background()); err == nil {
		m.Unlock()
	}
	if err := rw.RLockContext(context.Background()); err == nil {
		rw.RUnlock()
	}
	c.Close() // delivers the events still queued
	fmt.Println(held[event.KindMutex], "mutex,", held[event.KindRead], "read")
	// Output:
	// 1 mutex, 1 read
}
