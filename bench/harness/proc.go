package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
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
	// Kind, if set, makes the child's lock another primitive of the
	// family (kindRead, kindSemaphore, kindOnce); Limit is a semaphore's.
	Kind  string `json:"kind,omitempty"`
	Limit int64  `json:"limit,omitempty"`
	// Clients, if more than one, packs that many Clients into the child,
	// each with its own connection and lock, as if each were a process of
	// its own (they share nothing but the Go runtime): the scale scenario's
	// 64 waiting Clients on two cores. Every line to and from a packed
	// child begins with the index of its Client.
	Clients int `json:"clients,omitempty"`
	// Shards is the number of shards of a partition (kindPartition), Key
	// its name.
	Shards int `json:"shards,omitempty"`
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

// proc is a child process seen from the scenario; it runs one Client or,
// packed, several (each one "proc" of the group's numbering).
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
	procs []*proc
	// at maps a Client's number in the group (the proc of msg, send and
	// wait) to its child and its index there; packed children's Clients
	// are numbered one after the other.
	at      []clientAt
	first   []int // the number of each child's first Client
	packed  []bool
	msgs    chan msg
	pending []msg        // received, not yet asked for
	killed  map[int]bool // children killed on purpose: their exit is no error
	closed  bool
}

// clientAt is where a Client of a group runs.
type clientAt struct{ child, index int }

// spawn starts n children of spec, one Client each; they re-execute this
// binary with its arguments. It returns once all are connected and ready.
func spawn(ctx context.Context, n int, spec childSpec) (*group, error) {
	clients := make([]int, n)
	for i := range clients {
		clients[i] = 1
	}
	return spawnPacked(ctx, clients, spec)
}

// spawnPacked starts one child per element of clients, with that many
// Clients in it, numbered in order across the children. It returns once
// every Client is connected and ready.
func spawnPacked(ctx context.Context, clients []int, spec childSpec) (*group, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	g := &group{msgs: make(chan msg, 4096)}
	for i, k := range clients {
		g.first = append(g.first, len(g.at))
		g.packed = append(g.packed, k > 1)
		for j := range k {
			g.at = append(g.at, clientAt{i, j})
		}
	}
	for i := range clients {
		spec := spec
		spec.Clients = clients[i]
		b, _ := json.Marshal(spec)
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
		first, packed := g.first[i], g.packed[i]
		go func() {
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				line, id := sc.Text(), first
				if packed {
					idx, rest, _ := strings.Cut(line, " ")
					j, err := strconv.Atoi(idx)
					if err == nil {
						id, line = first+j, rest
					}
				}
				g.msgs <- parseMsg(id, line)
			}
			_ = cmd.Wait()
			g.msgs <- msg{proc: first, kind: "exited"}
			close(p.done)
		}()
	}
	for range len(g.at) {
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

// send writes a command line to Client i.
func (g *group) send(i int, words ...any) {
	at := g.at[i]
	p := g.procs[at.child]
	if g.packed[at.child] {
		words = append([]any{at.index}, words...)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = fmt.Fprintln(p.stdin, words...)
}

// wait returns the earliest message of kind from child proc (-1: any
// child). An "error" message, an "exited" one (unless asked for), or the
// timeout is an error; other messages are kept for later waits.
func (g *group) wait(ctx context.Context, kind string, proc int, timeout time.Duration) (msg, error) {
	wanted := func(m msg) bool { return m.kind == kind && (proc < 0 || m.proc == proc) }
	return g.waitFor(ctx, wanted, kind == "exited", fmt.Sprintf("%q from process %d", kind, proc), timeout)
}

// waitAny returns the earliest message, from any child, of one of kinds,
// as wait does.
func (g *group) waitAny(ctx context.Context, kinds []string, timeout time.Duration) (msg, error) {
	wanted := func(m msg) bool { return slices.Contains(kinds, m.kind) }
	return g.waitFor(ctx, wanted, false, fmt.Sprintf("%q from any process", kinds), timeout)
}

// waitFor returns the earliest message wanted, as wait describes; what
// names it in the timeout's error; exits, if set, makes an "exited"
// message no error.
func (g *group) waitFor(ctx context.Context, wanted func(msg) bool, exits bool, what string, timeout time.Duration) (msg, error) {
	match := func(m msg) (bool, error) {
		switch {
		case m.kind == "error":
			return true, fmt.Errorf("process %d: %s", m.proc, m.text)
		case m.kind == "exited" && !exits && !g.killed[m.proc]:
			return true, fmt.Errorf("process %d exited unexpectedly", m.proc)
		case wanted(m):
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
			return msg{}, fmt.Errorf("no %s within %v", what, timeout)
		case <-ctx.Done():
			return msg{}, context.Cause(ctx)
		}
	}
}

// kill sends SIGKILL to the child of Client i (not packed) and returns the Mono time just before.
func (g *group) kill(i int) int64 {
	if g.killed == nil {
		g.killed = map[int]bool{}
	}
	g.killed[i] = true
	t := Mono()
	_ = g.procs[g.at[i].child].cmd.Process.Signal(syscall.SIGKILL)
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
