//go:build unix && !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

func inForeground() bool { return false }
