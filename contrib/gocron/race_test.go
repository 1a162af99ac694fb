//go:build race

package dsyncgocron_test

import "testing"

// skipUnderRace skips the Locker's simulation under the race detector:
// the Go runtime crashed in the public-API simulation's synctest bubbles
// under -race (.ci/run says when), so CI runs integration/apisim, and this,
// without it.
func skipUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("the public-API simulation runs without -race (see .ci/run)")
}
