package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// childEnv carries a child's spec; its presence makes the process a child.
const childEnv = "DSYNC_BENCH_CHILD"

// childSpec tells a re-executed process what to be.
type childSpec struct {
	NS       string        `json:"ns"`
	Key      string        `json:"key"`
	Election bool          `json:"election,omitempty"`
	TTL      time.Duration `json:"ttl"`
}

// IsChild reports whether this process was started by a scenario as one
// of its lock-holding processes. The command's main must then build the
// same Driver it was started with and return RunChild's code.
func IsChild() bool { return os.Getenv(childEnv) != "" }

// A msg is one line a child writes: a word and integer arguments.
type msg struct {
	proc int
	kind string
	args []int64
	text string
}

// proc is a child process seen from the scenario.
type proc struct {
	id    int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex // serializes writes to stdin
	done  chan struct{}
}

// group is the children of one scenario run; their messages arrive on one
// channel.
type group struct {
	procs   []*proc
	msgs    chan msg
	pending []msg        // received, not yet asked for
	killed  map[int]bool // children killed on purpose: their exit is no error
	closed  bool
}

// spawn starts n children of spec; they re-execute this binary with its
// arguments. It returns once all are connected and ready.
func spawn(ctx context.Context, n int, spec childSpec) (*group, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(spec)
	g := &group{msgs: make(chan msg, 1024)}
	for i := range n {
		cmd := exec.Command(exe, os.Args[1:]...)
		cmd.Env = append(os.Environ(), childEnv+"="+string(b))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = childSysProcAttr()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			g.close()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			g.close()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			g.close()
			return nil, err
		}
		p := &proc{id: i, cmd: cmd, stdin: stdin, done: make(chan struct{})}
		g.procs = append(g.procs, p)
		go func() {
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				g.msgs <- parseMsg(p.id, sc.Text())
			}
			_ = cmd.Wait()
			g.msgs <- msg{proc: p.id, kind: "exited"}
			close(p.done)
		}()
	}
	for range n {
		if _, err := g.wait(ctx, "ready", -1, 120*time.Second); err != nil {
			g.close()
			return nil, err
		}
	}
	return g, nil
}

func parseMsg(id int, line string) msg {
	f := strings.Fields(line)
	m := msg{proc: id, text: line}
	if len(f) == 0 {
		return m
	}
	m.kind = f[0]
	for _, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			break
		}
		m.args = append(m.args, v)
	}
	return m
}

// send writes a command line to child i.
func (g *group) send(i int, words ...any) {
	p := g.procs[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = fmt.Fprintln(p.stdin, words...)
}

// wait returns the earliest message of kind from child proc (-1: any
// child). An "error" message, an "exited" one (unless asked for), or the
// timeout is an error; other messages are kept for later waits.
func (g *group) wait(ctx context.Context, kind string, proc int, timeout time.Duration) (msg, error) {
	match := func(m msg) (bool, error) {
		switch {
		case m.kind == "error":
			return true, fmt.Errorf("process %d: %s", m.proc, m.text)
		case m.kind == "exited" && kind != "exited" && !g.killed[m.proc]:
			return true, fmt.Errorf("process %d exited unexpectedly", m.proc)
		case m.kind == kind && (proc < 0 || m.proc == proc):
			return true, nil
		}
		return false, nil
	}
	for i, m := range g.pending {
		if ok, err := match(m); ok {
			g.pending = append(g.pending[:i:i], g.pending[i+1:]...)
			return m, err
		}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case m := <-g.msgs:
			if ok, err := match(m); ok {
				return m, err
			}
			g.pending = append(g.pending, m)
		case <-t.C:
			return msg{}, fmt.Errorf("no %q from process %d within %v", kind, proc, timeout)
		case <-ctx.Done():
			return msg{}, context.Cause(ctx)
		}
	}
}

// kill sends SIGKILL to child i and returns the Mono time just before.
func (g *group) kill(i int) int64 {
	if g.killed == nil {
		g.killed = map[int]bool{}
	}
	g.killed[i] = true
	t := Mono()
	_ = g.procs[i].cmd.Process.Signal(syscall.SIGKILL)
	return t
}

// close asks every child to exit, and kills those that do not within 10 s.
func (g *group) close() {
	if g.closed {
		return
	}
	g.closed = true
	for _, p := range g.procs {
		p.mu.Lock()
		_, _ = fmt.Fprintln(p.stdin, "exit")
		p.stdin.Close()
		p.mu.Unlock()
	}
	deadline := time.After(10 * time.Second)
	for _, p := range g.procs {
		for waiting := true; waiting; {
			select {
			case <-p.done:
				waiting = false
			case <-g.msgs: // keep the readers from blocking
			case <-deadline:
				_ = p.cmd.Process.Kill()
			}
		}
	}
}

// RunChild is the whole life of a child process: connect, make the lock,
// then obey commands on stdin until "exit" or EOF. It returns the exit code.
func RunChild(d Driver) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bench child: bad spec:", err)
		return 2
	}
	out := &lineWriter{w: bufio.NewWriter(os.Stdout)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := NewMeter()
	conn, err := d.Connect(ctx, m, spec.NS)
	if err != nil {
		out.say("error connect:", err)
		return 1
	}
	defer conn.Close()
	var l Locker
	if spec.Election {
		e, ok := conn.(Elections)
		if !ok {
			out.say("error", d.Name(), "has no elections")
			return 1
		}
		l, err = e.NewElection(spec.Key, spec.TTL)
	} else {
		l, err = conn.NewMutex(spec.Key, spec.TTL)
	}
	if err != nil {
		out.say("error new lock:", err)
		return 1
	}
	out.say("ready")

	var held sync.WaitGroup // a Lock in flight
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "lock":
			held.Add(1)
			go func() {
				defer held.Done()
				if err := l.Lock(ctx); err != nil {
					out.say("error lock:", err)
					return
				}
				out.say("acquired", Mono())
			}()
		case "unlock":
			held.Wait()
			out.say("releasing", Mono())
			if err := l.Unlock(ctx); err != nil {
				out.say("error unlock:", err)
				continue
			}
			out.say("released", Mono())
		case "stats":
			c := m.Snapshot()
			out.say("stats", Mono(), c.Commands, c.BytesOut, c.BytesIn)
		case "loop":
			start, _ := strconv.ParseInt(f[1], 10, 64)
			until, _ := strconv.ParseInt(f[2], 10, 64)
			go loop(ctx, l, start, until, out)
		case "exit":
			return 0
		}
	}
	return 0
}

// loop locks and unlocks as fast as it can from start to until (Mono
// times), then reports "loopdone <holds>": the holds that began before
// until.
func loop(ctx context.Context, l Locker, start, until int64, out *lineWriter) {
	time.Sleep(time.Duration(start - Mono()))
	n := 0
	for {
		if err := l.Lock(ctx); err != nil {
			out.say("error lock:", err)
			return
		}
		a := Mono()
		if err := l.Unlock(ctx); err != nil {
			out.say("error unlock:", err)
			return
		}
		if a >= until {
			break
		}
		n++
	}
	out.say("loopdone", n)
}

// lineWriter writes whole lines to stdout, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (lw *lineWriter) say(a ...any) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	line := fmt.Sprintln(a...)
	// Keep each message on one line.
	line = strings.ReplaceAll(strings.TrimSuffix(line, "\n"), "\n", " ") + "\n"
	_, _ = lw.w.WriteString(line)
	_ = lw.w.Flush()
}
