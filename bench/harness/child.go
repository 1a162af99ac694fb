package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

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
		c := &childClient{m: NewMeter(), out: clientWriter{w: w}, spec: spec}
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

	obeyStdin(ctx, subs)
	return 0
}

// obeyStdin hands each line of stdin to the Client it names (the first
// word, if the process has several) until "exit" or EOF.
func obeyStdin(ctx context.Context, subs []*childClient) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] == "exit" {
			return
		}
		if c, f, ok := addressee(subs, f); ok && len(f) > 0 {
			c.obey(ctx, f)
		}
	}
}

// addressee returns the Client a command's words f are for, and the
// command without its Client's number; ok is false if that number names
// no Client.
func addressee(subs []*childClient, f []string) (c *childClient, cmd []string, ok bool) {
	if len(subs) == 1 || len(f) == 0 {
		return subs[0], f, true
	}
	i, err := strconv.Atoi(f[0])
	if err != nil || i < 0 || i >= len(subs) {
		return nil, nil, false
	}
	return subs[i], f[1:], true
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
	case spec.Kind == kindPartition:
		if _, ok := conn.(Partitions); !ok {
			return nil, errors.New("no partitioned election in this library")
		}
		return nil, nil
	case spec.Kind == kindLockSet:
		if _, ok := conn.(LockSets); !ok {
			return nil, errors.New("no lock sets in this library")
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
	// "join" makes a member of the partition Key and runs it, "leave"
	// closes it (partition_child.go).
	kindPartition = "partition"
	// "sets" takes sets of keys, as lock sets or by Mutexes one by one
	// (lockset_child.go).
	kindLockSet = "lockset"
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
	spec childSpec
	part partMember // kindPartition: the member between join and leave
	// kindLockSet: the Mutex of each key that "sets" took by Mutexes,
	// used by one "sets" at a time.
	mutexes map[string]Locker
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
	case "id", "transfer":
		c.transferCmd(ctx, f)
	case "sets":
		c.setsCmd(ctx, f)
	case "join":
		c.join(ctx, c.spec)
	case "leave":
		c.leave()
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
