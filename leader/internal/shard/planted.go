package shard

import "github.com/go-dsync/dsync/internal/plant"

// keptOwners is the owners AssignAvoiding keeps: current, the shards'
// owners now. plant.PartitionIgnoresOwners (a negative control of
// integration/apisim) keeps none. This is the one decision of the
// package a planted bug changes; plant.On is false in every build
// without -tags dsync_planted, and this is current.
func keptOwners(current []string) []string {
	if plant.On && plant.Is(plant.PartitionIgnoresOwners) {
		return nil
	}
	return current
}
