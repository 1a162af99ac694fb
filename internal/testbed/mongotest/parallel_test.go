package mongotest

import (
	"flag"
	"strconv"
	"testing"
)

// TestParallelAtLeast: it raises -test.parallel when it was not given,
// and never lowers it; under the race detector it leaves it alone.
func TestParallelAtLeast(t *testing.T) {
	p := flag.Lookup("test.parallel")
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		t.Skip("-test.parallel was given: ParallelAtLeast leaves it alone")
	}
	if raceDetector {
		before := p.Value.String()
		ParallelAtLeast(1000)
		if got := p.Value.String(); got != before {
			t.Errorf("ParallelAtLeast(1000) under the race detector: -test.parallel %s, want it kept at %s", got, before)
		}
		return
	}
	cur, err := strconv.Atoi(p.Value.String())
	if err != nil {
		t.Fatal(err)
	}
	ParallelAtLeast(cur - 1)
	if got := p.Value.String(); got != strconv.Itoa(cur) {
		t.Errorf("ParallelAtLeast(%d) with -test.parallel %d: %s, want it kept", cur-1, cur, got)
	}
	ParallelAtLeast(cur + 1)
	if got := p.Value.String(); got != strconv.Itoa(cur+1) {
		t.Errorf("ParallelAtLeast(%d) with -test.parallel %d: %s, want %d", cur+1, cur, got, cur+1)
	}
}
