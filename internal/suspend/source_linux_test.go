package suspend

import (
	"testing"
	"time"
)

func TestReadBoottime(t *testing.T) {
	lo1, hi1, ok := readBoottime()
	if !ok {
		t.Fatal("CLOCK_BOOTTIME unreadable")
	}
	if lo1 > hi1 {
		t.Fatalf("bounds inverted: lo %v > hi %v", lo1, hi1)
	}
	for range 1000 {
		lo, hi, ok := readBoottime()
		if !ok || lo > hi {
			t.Fatalf("reading (%v, %v, %v)", lo, hi, ok)
		}
		// Unless the machine was suspended in between, both brackets hold
		// the same constant, so they overlap.
		if max(lo, lo1) > min(hi, hi1) && lo < lo1+time.Millisecond {
			t.Fatalf("readings [%v, %v] and [%v, %v] do not overlap", lo1, hi1, lo, hi)
		}
	}
	t.Logf("CLOCK_BOOTTIME − CLOCK_MONOTONIC in [%v, %v]; counted since start: %v", lo1, hi1, Process.Elapsed())
	if Process.read == nil {
		t.Fatal("Process has no source on Linux")
	}
}
