//go:build race

package mongotest

const raceEnabled = true
