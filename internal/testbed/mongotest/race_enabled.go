//go:build race

package mongotest

// raceDetector: this test binary was built with the race detector.
const raceDetector = true
