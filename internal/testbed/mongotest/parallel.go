package mongotest

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
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

// ParallelWhenQuiet is ParallelAtLeast for a package whose parallel tests
// each start processes and a server of their own: it raises
// -test.parallel to n only while the machine is not busy: its one-minute
// load average below twice its number of CPUs when the test binary
// starts (Linux's /proc/loadavg; elsewhere it leaves go test's default).
// go test work itself keeps the load of a quiet machine near its cores
// (two test binaries and the compiler); CI's loaded stage adds four
// burners per core. On a busy machine such tests, n at a time beside CPU
// burners, starved each other and their servers; on a quiet one they
// mostly wait on TTLs.
func ParallelWhenQuiet(n int) {
	flag.Parse()
	if !machineQuiet() {
		return
	}
	ParallelAtLeast(n)
}

// machineQuiet reports whether the one-minute load average is below twice
// the number of CPUs; false when it cannot be read.
func machineQuiet() bool {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false
	}
	load, err := strconv.ParseFloat(f[0], 64)
	return err == nil && load < float64(2*runtime.NumCPU())
}
