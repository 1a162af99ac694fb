//go:build !dsync_planted

package dsyncgocron

// plantable is false in every build but the negative controls'.
const plantable = false
