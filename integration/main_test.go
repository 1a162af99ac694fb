package integration

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/go-dsync/dsync/integration/worker"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

func TestMain(m *testing.M) {
	// A re-executed test binary is a worker, not a test run.
	if cfg, ok, err := worker.FromEnv(); ok {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(worker.Main(cfg))
	}
	// Four fault suites at a time on an idle machine, one per core on a
	// busy one (docs/contributing.md).
	mongotest.ParallelWhenQuiet(4)
	code := mongotest.Run(m)
	fmt.Println(summary.line())
	if err := summary.used(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
