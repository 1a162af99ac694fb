//go:build !dsync_planted

package plant

// On is false in every build but the negative controls'.
const On = false
