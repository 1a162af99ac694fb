//go:build unix && race

package main

// raceEnabled: the tests build dsync with the race detector too.
const raceEnabled = true
