//go:build race

package lanemodel

// raceEnabled: the explorations run one goroutine each and share nothing,
// so the race detector has nothing to find in them; it only slows them
// about tenfold, and the larger configurations leave it out.
const raceEnabled = true
