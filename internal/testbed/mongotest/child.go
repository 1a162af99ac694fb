package mongotest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/serverproc"
)

// envLogLvl sets the FerretDB child's log level (default error) and sends
// its stderr to ours instead of a file.
const envLogLvl = "DSYNC_MONGOTEST_LOG"

// childStartTimeout bounds how long we wait for a FerretDB child's URI
// line.
const childStartTimeout = 60 * time.Second

// child is a server child process (FerretDB, or the Docker deployment's
// keeper) seen from the parent. While it runs,
// the parent has NO goroutine attached to it (stderr goes to a file, the
// process is reaped only by kill/stop), so goleak checks stay clean.
type child struct {
	name    string // for messages: "FerretDB child"
	cmd     *exec.Cmd
	stdin   *os.File // write end of the child's stdin; closing it stops the child
	logPath string   // child's stderr; "" when it goes to our stderr
	uri     string

	waitOnce sync.Once
	waitErr  error
}

// startChild runs the ferretserver command (see [serverBinary]) with data
// in dir (or, with pgURL set, in that PostgreSQL database), listening on addr, appending its stderr to logPath (unless
// DSYNC_MONGOTEST_LOG is set, in which case it goes to our stderr); it waits
// for the URI line and returns. It does not ping; callers do. It runs
// at a raised priority where it may (withServerPriority).
func startChild(dir, addr, pgURL, logPath string) (*child, error) {
	exe, err := serverBinary()
	if err != nil {
		return nil, err
	}
	args := []string{"-dir", dir, "-addr", addr}
	if pgURL != "" {
		args = append(args, "-postgresql", pgURL)
	}
	if lvl := os.Getenv(envLogLvl); lvl != "" {
		args = append(args, "-log", lvl)
	}
	exe, args = withServerPriority(exe, args)
	return startServerProcess("FerretDB child", exe, args, logPath, childStartTimeout, syscall.SIGKILL)
}

// childExit is a child that exited before it printed its URI.
type childExit struct {
	name   string
	code   int    // its exit status
	stdout string // what it printed instead
	stderr string
}

func (e *childExit) Error() string {
	return fmt.Sprintf("%s exited before listening (exit status %d); stdout %q; stderr:\n%s", e.name, e.code, e.stdout, e.stderr)
}

// startServerProcess runs exe with args, stderr appended to logPath
// (unless DSYNC_MONGOTEST_LOG is set, in which case it goes to our
// stderr), and waits up to timeout for the URI line it prints on stdout
// when it serves. A child that exits first is a *childExit. deathSig is
// what the child gets if the parent dies (Linux): SIGKILL for a
// FerretDB, SIGTERM for the keeper of a Docker deployment, which then
// removes its containers. The child also exits on stdin EOF, which
// covers other platforms.
func startServerProcess(name, exe string, args []string, logPath string, timeout time.Duration, deathSig syscall.Signal) (*child, error) {
	var files []*os.File // parent's copies of the child's ends, closed after Start
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	files = append(files, inR)
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll()
		inW.Close()
		return nil, err
	}
	files = append(files, outW)

	cmd := exec.Command(exe, args...)
	cmd.Stdin = inR
	cmd.Stdout = outW
	cmd.Stderr = os.Stderr
	if os.Getenv(envLogLvl) == "" {
		lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			closeAll()
			inW.Close()
			outR.Close()
			return nil, err
		}
		files = append(files, lf)
		cmd.Stderr = lf
	} else {
		logPath = ""
	}
	serverproc.SetPdeathsig(cmd, deathSig)
	c := &child{name: name, cmd: cmd, stdin: inW, logPath: logPath}

	err = cmd.Start()
	closeAll()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %s: %w", exe, err)
	}

	// Read the URI line synchronously, with a deadline (pipes are pollable).
	_ = outR.SetReadDeadline(time.Now().Add(timeout))
	line, rerr := bufio.NewReader(outR).ReadString('\n')
	outR.Close()
	line = strings.TrimSpace(line)
	if rerr == nil && strings.HasPrefix(line, "mongodb://") {
		c.uri = line
		return c, nil
	}
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		c.kill()
		return nil, fmt.Errorf("%s did not listen within %v; stderr:\n%s", name, timeout, c.stderr())
	}
	c.kill() // most likely exited already; reap it
	return nil, &childExit{name: name, code: c.cmd.ProcessState.ExitCode(), stdout: line, stderr: c.stderr()}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) wait() error {
	c.waitOnce.Do(func() { c.waitErr = c.cmd.Wait() })
	return c.waitErr
}

// kill sends SIGKILL and waits for the process to be reaped.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	_ = c.wait()
	c.stdin.Close()
}

// stop asks the child to exit (stdin EOF + SIGTERM) and waits up to timeout
// before killing it.
func (c *child) stop(timeout time.Duration) error {
	c.stdin.Close()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	// A stopped child (Process.Pause) acts on nothing until it runs again.
	_ = sigCont(c.cmd.Process)
	if !c.exitedWithin(timeout) {
		return fmt.Errorf("%s did not stop within %v, killed", c.name, timeout)
	}
	if c.waitErr != nil {
		var ee *exec.ExitError
		if errors.As(c.waitErr, &ee) && ee.ExitCode() == -1 {
			return nil // killed by a signal (a test may have sent one)
		}
		return fmt.Errorf("%s: %v; stderr:\n%s", c.name, c.waitErr, c.stderr())
	}
	return nil
}

// exitedWithin waits up to d for c to exit and be reaped. If it has not
// by then, it kills and reaps c, and reports false.
func (c *child) exitedWithin(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		_ = c.wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		_ = c.cmd.Process.Kill()
		<-done
		return false
	}
}

// stderr returns the tail of the child's stderr log.
func (c *child) stderr() string {
	if c.logPath == "" {
		return "(on the test's stderr: DSYNC_MONGOTEST_LOG is set)"
	}
	if s := serverproc.Tail(c.logPath, 32<<10); s != "" {
		return s
	}
	return "(empty)"
}
