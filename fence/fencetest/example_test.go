package fencetest_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencetest"
)

// registers is an adapter of one's own under test: registers in memory,
// each write admitted through a fence.Memory.
type registers struct {
	marks fence.Memory
	mu    sync.Mutex
	regs  map[string]int64
}

func (r *registers) Write(ctx context.Context, w fencetest.Write) error {
	release, err := r.marks.Admit(ctx, w.Key, w.Token)
	if err != nil {
		return err // fence.ErrStale: nothing written
	}
	defer release()
	if w.Admitted != nil {
		if err := w.Admitted(ctx); err != nil {
			return err // the suite abandons the write
		}
	}
	r.mu.Lock()
	r.regs[w.Key] = w.Value
	r.mu.Unlock()
	return nil
}

func (r *registers) Read(ctx context.Context, key string) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.regs[key], nil
}

// An adapter's test runs the suite with fencetest.Run(t, r,
// fencetest.Options{}); Check returns the report instead of failing a test.
func ExampleCheck() {
	r := &registers{regs: map[string]int64{}}
	report, err := fencetest.Check(context.Background(), r, fencetest.Options{Trials: 20, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("trials:", report.Trials)
	fmt.Println("found:", report.Err())
	// Output:
	// trials: 20
	// found: <nil>
}
