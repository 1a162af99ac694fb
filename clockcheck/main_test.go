package clockcheck_test

import (
	"testing"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestMain runs the tests against the shared test server and then checks
// that no goroutine outlived them: an Estimator's is stopped by Close.
func TestMain(m *testing.M) { mongotest.MainWithLeakCheck(m) }
