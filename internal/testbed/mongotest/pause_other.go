//go:build !unix

package mongotest

import (
	"errors"
	"os"
)

// sigStop cannot stop a process outside Unix, which has no SIGSTOP.
func sigStop(*os.Process) error {
	return errors.New("pausing a process needs SIGSTOP (Unix)")
}

// sigCont has nothing to resume outside Unix: nothing was stopped.
func sigCont(*os.Process) error { return nil }

// sigQuit cannot ask for a goroutine dump outside Unix.
func sigQuit(*os.Process) error { return errors.ErrUnsupported }
