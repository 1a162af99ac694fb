package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// setParentDeathSignal has the kernel send sig to the command if dsync
// dies (SIGKILL, OOM): its lease then runs out, and the command must not
// go on unprotected.
func setParentDeathSignal(cmd *exec.Cmd, sig syscall.Signal) {
	cmd.SysProcAttr.Pdeathsig = sig
}

// childProcesses returns the pid of a child process (the lowest) of each
// of pids that has one, read from /proc; of every process, if pids is
// nil.
func childProcesses(pids []int) map[int]int {
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		_, rest, ok := strings.Cut(string(b), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil && (pids == nil || want[ppid]) {
			if old, ok := children[ppid]; !ok || pid < old {
				children[ppid] = pid
			}
		}
	}
	return children
}
