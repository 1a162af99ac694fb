//go:build dsync_planted

package plant

// On is true in the build of the negative controls.
const On = true
