package fencehttptest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencehttp/fencehttptest"
	"github.com/go-dsync/dsync/fence/fencetest"
)

// The HTTP adapter checked over loopback with a service of one instance
// whose marks are in its memory (a test calls fencetest.Run(t, r, ...)
// instead), and the same service without the adapter's handler, in which
// the suite finds the stale writes.
func ExampleNewResource() {
	opts := fencetest.Options{Trials: 20, Seed: 1}

	fenced := fencehttptest.NewResource(&fence.Memory{})
	defer fenced.Close()
	report, err := fencetest.Check(context.Background(), fenced, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("fenced:", report.Err())

	unfenced := fencehttptest.NewUnfenced()
	defer unfenced.Close()
	report, err = fencetest.Check(context.Background(), unfenced, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unfenced, stale writes found:", len(report.StaleWrites) > 0)
	// Output:
	// fenced: <nil>
	// unfenced, stale writes found: true
}
