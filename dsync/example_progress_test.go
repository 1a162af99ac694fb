package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// A holder whose work may get stuck while its process stays alive: with a
// progress deadline, a hold during which Progress was not called for a
// minute is lost (Lost closes) and its claim released, so that another
// process takes over.
func ExampleWithProgressDeadline() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()

	mu, err := dsync.NewMutex(client, "reindex", dsync.WithProgressDeadline(time.Minute))
	if err != nil {
		panic(err)
	}
	mu.Lock()
	for batch := range 3 {
		select {
		case <-mu.Lost():
			fmt.Println("stalled:", errors.Is(mu.Err(), dsync.ErrStalled))
			return
		default:
		}
		writeBatch(batch, mu.Token())
		mu.Progress() // one atomic store: nothing is sent to the store
	}
	fmt.Println("unlock:", mu.UnlockContext(context.Background()))
	// Output:
	// batch 0 written, fenced by the hold's token
	// batch 1 written, fenced by the hold's token
	// batch 2 written, fenced by the hold's token
	// unlock: <nil>
}
