//go:build dsync_planted

package dsyncgocron

// plantable is true in the build of the negative controls.
const plantable = true
