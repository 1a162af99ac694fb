// Package longtest says whether a test run asked for the long forms of
// the tests: the full-size simulations, hammers, scale and fault tests.
//
// `go test work`, as the README gives it, runs the short forms, so that
// a newcomer's run ends in minutes; CI sets DSYNC_LONG=1 and runs the
// long forms as well. A test with a long form calls Enabled to pick its
// size, or Skip when it has no short form worth running.
package longtest

import (
	"os"
	"strconv"
	"testing"
)

// Env is the environment variable that asks for the long forms.
const Env = "DSYNC_LONG"

// Enabled reports whether the long forms were asked for: DSYNC_LONG is
// true (as strconv.ParseBool reads it) and -short was not given.
func Enabled() bool {
	if testing.Short() {
		return false
	}
	ok, _ := strconv.ParseBool(os.Getenv(Env))
	return ok
}

// Skip skips t unless the long forms were asked for, saying how to ask.
func Skip(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("a long test: run with " + Env + "=1 (CI does)")
	}
}
