package shard

import "github.com/go-dsync/dsync/internal/plant"

// plantedCurrent is the owners AssignAvoiding keeps: current, or none when
// plant.PartitionIgnoresOwners is planted (a negative control of
// integration/apisim; plant.On is false in every other build, and this
// is current).
func plantedCurrent(current []string) []string {
	if plant.On && plant.Is(plant.PartitionIgnoresOwners) {
		return nil
	}
	return current
}
