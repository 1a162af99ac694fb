package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// RunChild is the whole life of a child process: connect, make the lock
// (of each of its Clients, if packed), then obey commands on stdin until
// "exit" or EOF. It returns the exit code.
func RunChild(d Driver) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bench child: bad spec:", err)
		return 2
	}
	w := &lineWriter{w: bufio.NewWriter(os.Stdout)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := max(spec.Clients, 1)
	subs := make([]*childClient, n)
	for i := range subs {
		c := &childClient{m: NewMeter(), out: clientWriter{w: w}}
		if n > 1 {
			c.out.prefix = []any{i}
		}
		subs[i] = c
		conn, err := d.Connect(ctx, c.m, spec.NS)
		if err != nil {
			c.out.say("error connect:", err)
			return 1
		}
		defer conn.Close()
		c.conn = conn
		if c.l, err = childLock(conn, spec); err != nil {
			c.out.say("error new lock:", err)
			return 1
		}
	}
	for _, c := range subs {
		c.out.say("ready")
	}

	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] == "exit" {
			return 0
		}
		c := subs[0]
		if n > 1 && len(f) > 0 {
			i, err := strconv.Atoi(f[0])
			if err != nil || i < 0 || i >= n {
				continue
			}
			c, f = subs[i], f[1:]
		}
		if len(f) > 0 {
			c.obey(ctx, f)
		}
	}
	return 0
}

// childLock makes the lock a child's commands take and release: a mutex,
// an election, the read side of a reader/writer lock, or one unit of a
// semaphore; nil for a Once, which its "do" command makes per key.
func childLock(conn Conn, spec childSpec) (Locker, error) {
	switch {
	case spec.Election:
		e, ok := conn.(Elections)
		if !ok {
			return nil, errors.New("no elections in this library")
		}
		return e.NewElection(spec.Key, spec.TTL)
	case spec.Kind == kindRead:
		rws, ok := conn.(RWMutexes)
		if !ok {
			return nil, errors.New("no reader/writer lock in this library")
		}
		rw, err := rws.NewRWMutex(spec.Key, spec.TTL)
		return readSide{rw}, err
	case spec.Kind == kindSemaphore:
		ss, ok := conn.(Semaphores)
		if !ok {
			return nil, errors.New("no semaphore in this library")
		}
		s, err := ss.NewSemaphore(spec.Key, spec.Limit, spec.TTL)
		return oneUnit{s}, err
	case spec.Kind == kindOnce:
		if _, ok := conn.(Onces); !ok {
			return nil, errors.New("no Once in this library")
		}
		return nil, nil
	}
	return conn.NewMutex(spec.Key, spec.TTL)
}

// The kinds of child (childSpec.Kind) besides a mutex or an election.
const (
	kindRead      = "read"      // Lock and Unlock are RLock and RUnlock
	kindSemaphore = "semaphore" // Lock and Unlock are Acquire(1) and Release(1)
	kindOnce      = "once"      // "do KEY START" calls Do on a new Once of KEY
)

// readSide is an RWLocker's read side as a Locker.
type readSide struct{ rw RWLocker }

func (r readSide) Lock(ctx context.Context) error   { return r.rw.RLock(ctx) }
func (r readSide) Unlock(ctx context.Context) error { return r.rw.RUnlock(ctx) }

// oneUnit is a Semaphore's single unit as a Locker.
type oneUnit struct{ s Semaphore }

func (u oneUnit) Lock(ctx context.Context) error   { return u.s.Acquire(ctx, 1) }
func (u oneUnit) Unlock(ctx context.Context) error { return u.s.Release(ctx, 1) }

// A childClient is one Client of a child process, with its lock.
type childClient struct {
	m    *Meter
	conn Conn
	l    Locker
	out  clientWriter
	held sync.WaitGroup // a Lock in flight
}

// obey carries out one command line f (without the Client's index).
func (c *childClient) obey(ctx context.Context, f []string) {
	out := c.out
	switch f[0] {
	case "lock":
		c.held.Add(1)
		go func() {
			defer c.held.Done()
			if err := c.l.Lock(ctx); err != nil {
				out.say("error lock:", err)
				return
			}
			out.say("acquired", Mono())
		}()
	case "unlock":
		c.held.Wait()
		out.say("releasing", Mono())
		if err := c.l.Unlock(ctx); err != nil {
			out.say("error unlock:", err)
			return
		}
		out.say("released", Mono())
	case "stats":
		s := c.m.Snapshot()
		out.say("stats", Mono(), s.Commands, s.BytesOut, s.BytesIn)
	case "names":
		// names <mono> <commands> <bytes out> <bytes in> then <name>
		// <count> pairs: commands by name, spaces in a name written '_'.
		s := c.m.Snapshot()
		words := []any{"names", Mono(), s.Commands, s.BytesOut, s.BytesIn}
		for name, k := range c.m.ByName() {
			words = append(words, strings.ReplaceAll(name, " ", "_"), k)
		}
		out.say(words...)
	case "loop":
		if len(f) < 3 {
			return
		}
		start, _ := strconv.ParseInt(f[1], 10, 64)
		until, _ := strconv.ParseInt(f[2], 10, 64)
		go loop(ctx, c.l, c.m, start, until, out)
	case "do":
		// do <key> <start>: at Mono time start, Do on a new Once of key;
		// then "did <runs of f here> <Mono at return> <commands sent>".
		if len(f) < 3 {
			return
		}
		key := f[1]
		start, _ := strconv.ParseInt(f[2], 10, 64)
		go do(ctx, c.conn, c.m, key, start, out)
	}
}

func do(ctx context.Context, conn Conn, m *Meter, key string, start int64, out clientWriter) {
	time.Sleep(time.Duration(start - Mono()))
	before := m.Snapshot()
	o, err := conn.(Onces).NewOnce(key)
	if err != nil {
		out.say("error new once:", err)
		return
	}
	var ran atomic.Int64
	if err := o.Do(ctx, func(context.Context) error { ran.Add(1); return nil }); err != nil {
		out.say("error do:", err)
		return
	}
	at := Mono()
	out.say("did", ran.Load(), at, m.Snapshot().Sub(before).Commands)
}

// loop locks and unlocks as fast as it can from start to until (Mono
// times), then reports "loopdone <holds> <commands>": the holds that began
// before until, and the commands m counted over all the cycles (one more
// than the holds: the last began at or after until).
func loop(ctx context.Context, l Locker, m *Meter, start, until int64, out clientWriter) {
	time.Sleep(time.Duration(start - Mono()))
	before := m.Snapshot()
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
	out.say("loopdone", n, m.Snapshot().Sub(before).Commands)
}

// clientWriter writes the lines of one Client of a child: with its index
// first if the child is packed.
type clientWriter struct {
	w      *lineWriter
	prefix []any
}

func (c clientWriter) say(a ...any) { c.w.say(append(c.prefix[:len(c.prefix):len(c.prefix)], a...)...) }

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
