//go:build !race

package dsyncmongo

const raceEnabled = false
