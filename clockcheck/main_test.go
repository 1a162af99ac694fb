package clockcheck_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/go-dsync/dsync/internal/mongotest"
)

// TestMain runs the tests against the shared test server and then checks
// that no goroutine outlived them: an Estimator's is stopped by Close.
func TestMain(m *testing.M) {
	code := mongotest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
