//go:build race

package dsyncmongo

// raceEnabled: the test binary, and with it the embedded FerretDB child
// process that re-executes it, runs under the race detector, which slows
// FerretDB's SQLite engine 10- to 25-fold.
const raceEnabled = true
