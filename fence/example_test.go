package fence_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/go-dsync/dsync/fence"
)

// A service of one instance keeps its marks in memory and admits each
// write through them: the holder's write under token 7 applies, and a
// paused earlier holder's write under token 6, arriving after it, is
// refused and changes nothing.
func ExampleMemory() {
	var marks fence.Memory
	stored := map[string]string{}
	write := func(key string, token uint64, value string) error {
		release, err := marks.Admit(context.Background(), key, token)
		if err != nil {
			return err
		}
		defer release() // the next writer of key waits until this write is done
		stored[key] = value
		return nil
	}

	if err := write("report", 7, "second"); err != nil {
		log.Fatal(err)
	}
	err := write("report", 6, "first") // the earlier holder wakes, late
	fmt.Println("stale:", errors.Is(err, fence.ErrStale))
	var stale *fence.StaleError
	if errors.As(err, &stale) {
		fmt.Println("refused token", stale.Token, "after token", stale.Mark)
	}
	fmt.Println("report:", stored["report"], "mark:", marks.Mark("report"))
	// Output:
	// stale: true
	// refused token 6 after token 7
	// report: second mark: 7
}

// Check refuses a key or token no adapter accepts before any I/O:
// token 0 is what dsync.Mutex.Token returns when the lock is not held.
func ExampleCheck() {
	fmt.Println(errors.Is(fence.Check("report", 0), fence.ErrBadToken))
	fmt.Println(errors.Is(fence.Check("", 1), fence.ErrBadKey))
	fmt.Println(fence.Check("report", 1))
	// Output:
	// true
	// true
	// <nil>
}
