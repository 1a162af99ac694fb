package leader

import "github.com/go-dsync/dsync/internal/plant"

// plantedLost is the channel a term's watch takes for the loss of its
// lease: nil, which never fires, when plant.LeaderKeepsTerm is planted (a
// negative control of internal/apisim; plant.On is false in every other
// build, and this is lost).
func plantedLost(lost <-chan struct{}) <-chan struct{} {
	if plant.On && plant.Is(plant.LeaderKeepsTerm) {
		return nil
	}
	return lost
}
