//go:build !dsync_planted

package queue

// planted is false in every build but the negative controls': the planted
// bugs' branches compile away.
const planted = false
