package leadermongo_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/go-dsync/dsync/internal/mongotest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := mongotest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
