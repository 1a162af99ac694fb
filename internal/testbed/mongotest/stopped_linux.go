package mongotest

import "golang.org/x/sys/unix"

// cldStopped is CLD_STOPPED of <signal.h>, the si_code of a child that
// stopped (golang.org/x/sys/unix does not name it).
const cldStopped = 5

// awaitStopped waits until the child pid is stopped, or has exited
// (exited is true then), and leaves it waitable as it was (WNOWAIT), so
// that its exec.Cmd still reaps it.
func awaitStopped(pid int) (exited bool, err error) {
	var info unix.Siginfo
	for {
		err = unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	return err == nil && info.Code != cldStopped, err
}
