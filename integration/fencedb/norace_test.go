//go:build !race

package fencedb

// raceEnabled: this test binary was built with the race detector.
const raceEnabled = false
