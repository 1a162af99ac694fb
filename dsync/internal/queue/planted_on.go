//go:build dsync_planted

package queue

// planted is true when built with -tags dsync_planted, for the negative
// controls (Engine.SetBug).
const planted = true
