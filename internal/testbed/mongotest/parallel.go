package mongotest

import (
	"flag"
	"strconv"
)

// ParallelAtLeast raises -test.parallel to n unless it was given on the
// command line or is already n or more. It is meant for the TestMain of a
// package whose parallel tests mostly wait on the server (on TTLs,
// hand-overs, faults) rather than compute: with GOMAXPROCS on a small
// runner (two), such a package keeps about a third of its CPU busy, so
// running n at a time shortens it without crowding the machine. Their
// assertions must already allow a busy machine (CI runs the suite beside
// CPU burners); tests with timing bounds stay out of t.Parallel, and so
// still run one at a time. Under the race detector, whose processes do
// compute (and run several times slower), it leaves go test's default. It
// parses the command line (flag.Parse).
func ParallelAtLeast(n int) {
	flag.Parse()
	if raceDetector {
		return
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	p := flag.Lookup("test.parallel")
	if given || p == nil {
		return
	}
	if cur, err := strconv.Atoi(p.Value.String()); err == nil && cur < n {
		_ = p.Value.Set(strconv.Itoa(n))
	}
}
