//go:build !dsync_planted

package chain

// planted is false in every build but the negative controls': the planted
// bugs' branches compile away.
const planted = false
