//go:build !race

package lanemodel

const raceEnabled = false
