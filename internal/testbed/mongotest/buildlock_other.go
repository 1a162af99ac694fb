//go:build !unix

package mongotest

// lockBuild does not lock outside Unix: parallel test binaries may compile
// the same packages at once, which only costs time.
func lockBuild() func() { return func() {} }
