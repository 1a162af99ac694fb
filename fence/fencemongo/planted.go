package fencemongo

import (
	"math"

	"github.com/go-dsync/dsync/internal/plant"
)

// The bug planted in this package for the negative control of the
// fenced-register simulation (fence_sim_test.go, package internal/plant).
// In every build without -tags dsync_planted, plant.On is false and this
// is the identity, which the compiler folds away.

// fenceLimit is the fence above which a Fenced with token refuses to
// act (atMostToken): token itself. plant.FenceSkipsCondition takes the
// largest fence there is, so that its condition never refuses anything.
func fenceLimit(token int64) int64 {
	if plant.On && plant.Is(plant.FenceSkipsCondition) {
		return math.MaxInt64
	}
	return token
}
