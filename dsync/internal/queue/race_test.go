//go:build race

package queue_test

// raceEnabled halves the simulation's default seeds: the race detector
// makes each seed about ten times slower.
const raceEnabled = true
