//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const demoUsage = `Usage: dsync demo [--ttl D]

Starts an embedded MongoDB-compatible server (FerretDB, on a loopback port,
with temporary data) and three processes, A, B and C, that campaign for the
leadership of the election "demo" and take turns on the lock "demo/jobs".
It prints who leads and each term's fencing token, kills the leader with
SIGKILL and measures how long the others take to notice (about the TTL),
then has the new leader resign and measures the handoff, shows what
'dsync status' shows, checks that the lock never had two holders at once,
and exits. Nothing needs to be installed, and --uri is not used: the demo
brings its own server. Its processes, all on this machine, wake each
other with direct hints on loopback (--hints 127.0.0.1:0, unless --hints
says otherwise). It takes about 10 seconds.

Flags:
  --ttl D   the lease length of the election and the lock (default 2s)

Exit status: 0 when everything behaved; 1 otherwise.
`

var demoCmd = &command{
	name:    "demo",
	summary: "watch three processes elect a leader, fail over and hand off",
	usage:   demoUsage,
	run:     runDemo,
}

// Names and timing of the demo.
const (
	demoElection = "demo"
	demoLock     = "demo/jobs"
	demoSteady   = 2500 * time.Millisecond // how long each phase runs before the next step
)

func runDemo(g *globals, args []string) int {
	fs := newFlagSet("demo", g)
	ttl := fs.Duration("ttl", 2*time.Second, "")
	pos, _, code, err := parseArgs(fs, demoUsage, args, false)
	if err != nil {
		return code
	}
	switch {
	case len(pos) > 0:
		return usageError("demo", fmt.Errorf("unexpected argument %q", pos[0]))
	case *ttl < 500*time.Millisecond || *ttl > time.Minute:
		return usageError("demo", fmt.Errorf("--ttl must be between 500ms and 1m, got %v", *ttl))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &demo{g: g, ttl: *ttl, start: time.Now(), events: make(chan procLine, 1024), out: os.Stdout}
	err = d.run(ctx)
	d.killAll()
	code = exitOK
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "dsync demo: interrupted")
		code = 128 + int(syscall.SIGINT)
	case err != nil:
		fmt.Fprintf(os.Stderr, "dsync demo: %v\n", oneLine(err))
		d.printLogs()
		code = exitFailure
	}
	d.cleanup()
	return code
}

type demo struct {
	g     *globals // with --uri pointing at the embedded server, for status
	ttl   time.Duration
	start time.Time
	out   io.Writer

	dir    string // temporary: server data and the candidates' logs
	server *embedded
	procs  []*proc
	events chan procLine

	// What the events said.
	holds       map[uint64]*lockHold
	leaders     []leaderTerm // every term, in order
	leader      *proc        // who leads now, as far as the events tell
	phaseTokens []uint64     // tokens of the holds started since the last lock row

	live     bool                    // print elections as they are reported
	nextNote func(leaderTerm) string // the note of the next election's row
}

// A proc is a candidate process.
type proc struct {
	label  string
	ready  bool
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	log    string // its stderr
	exited bool
	status int
	killed time.Time // when the demo sent SIGKILL
}

// A procLine is one line of a candidate's output, or its exit ("exit STATUS").
type procLine struct {
	p      *proc
	at     time.Time
	fields []string
}

type lockHold struct {
	p          *proc
	token      uint64
	start, end time.Time // end is zero while open
	cut        bool      // ended by the process's death
}

type leaderTerm struct {
	p     *proc
	token uint64
	at    time.Time
}

// run runs the demo's steps, printing a row of the event table for each
// event, and the summary.
func (d *demo) run(ctx context.Context) error {
	d.holds = make(map[uint64]*lockHold)
	if err := d.setUp(); err != nil {
		return err
	}
	if err := d.startAll(ctx); err != nil {
		return err
	}
	if err := d.election(ctx); err != nil {
		return err
	}
	failover, err := d.failover(ctx)
	if err != nil {
		return err
	}
	handoff, err := d.handoff(ctx)
	if err != nil {
		return err
	}
	// What dsync status shows, then stop.
	if err := d.showStatus(ctx); err != nil {
		return err
	}
	if err := d.stopAll(ctx); err != nil {
		return err
	}
	holds, err := d.checkLock()
	if err != nil {
		return err
	}
	d.summary(failover, handoff, holds)
	return nil
}

// setUp starts the embedded server, in a temporary directory that also
// holds the candidates' logs, and prints the introduction and the event
// table's header.
func (d *demo) setUp() error {
	dir, err := os.MkdirTemp("", "dsync-demo-")
	if err != nil {
		return err
	}
	d.dir = dir
	d.server, err = startEmbedded("127.0.0.1:0", filepath.Join(dir, "data"), nil)
	if err != nil {
		return err
	}
	d.g.uri = d.server.URI

	fmt.Fprintf(d.out, "dsync demo: processes A, B and C campaign for the leadership of %q and take turns on the lock %q.\n\n", demoElection, demoLock)
	intro := newTable("", "")
	intro.add("server", d.server.URI+" (embedded FerretDB, temporary data)")
	intro.add("ttl", fmtDur(d.ttl)+": a leader or lock holder that stops renewing is replaced after about this long")
	intro.write(d.out, "  ")
	fmt.Fprintln(d.out)
	d.printRow("TIME", "EVENT", "PROCESS", "TOKEN", "NOTE")
	return nil
}

// startAll starts the candidates A, B and C and waits until each is
// ready; from then on elections are printed as they are reported.
func (d *demo) startAll(ctx context.Context) error {
	for _, label := range []string{"A", "B", "C"} {
		if err := d.spawn(label); err != nil {
			return err
		}
	}
	var pids []string
	for _, p := range d.procs {
		if err := d.await(ctx, 30*time.Second, "every process to start", func() bool { return p.ready }); err != nil {
			return err
		}
		pids = append(pids, strconv.Itoa(p.cmd.Process.Pid))
	}
	d.row(time.Now(), "started", "A B C", "", "pids "+strings.Join(pids, ", "))
	d.live = true
	for _, t := range d.leaders { // elected while others were starting
		d.rowElected(t, "")
	}
	return nil
}

// election is step 1: a leader is elected, and the candidates take turns
// on the lock for a while.
func (d *demo) election(ctx context.Context) error {
	if _, err := d.awaitLeader(ctx, 0, nil); err != nil {
		return err
	}
	if err := d.steady(ctx, demoSteady); err != nil {
		return err
	}
	d.lockRow("")
	return nil
}

// failover is step 2: the leader is killed, and another takes over once
// its lease has expired. It returns how long that took.
func (d *demo) failover(ctx context.Context) (time.Duration, error) {
	dead, err := d.awaitLeader(ctx, 0, nil)
	if err != nil {
		return 0, err
	}
	n := len(d.leaders)
	killedAt := time.Now()
	dead.killed = killedAt
	_ = dead.cmd.Process.Kill()
	d.row(killedAt, "SIGKILL", dead.label, "", "the leader, pid "+strconv.Itoa(dead.cmd.Process.Pid))
	var failover time.Duration
	d.nextNote = func(t leaderTerm) string {
		failover = t.at.Sub(killedAt)
		return fmt.Sprintf("failover %s after the kill (ttl %s)", fmtDur(failover), fmtDur(d.ttl))
	}
	if _, err := d.awaitLeader(ctx, n, dead); err != nil {
		return 0, err
	}
	if err := d.steady(ctx, demoSteady); err != nil {
		return 0, err
	}
	d.lockRow(d.takeoverNote(dead))
	return failover, nil
}

// handoff is step 3: the leader resigns, and the next standby takes over
// at once. It returns how long that took.
func (d *demo) handoff(ctx context.Context) (time.Duration, error) {
	resigner, err := d.awaitLeader(ctx, 0, nil)
	if err != nil {
		return 0, err
	}
	n := len(d.leaders)
	resignAt := time.Now()
	if _, err := fmt.Fprintln(resigner.stdin, "resign"); err != nil {
		return 0, fmt.Errorf("telling %s to resign: %w", resigner.label, err)
	}
	d.row(resignAt, "resign", resigner.label, "", "Resign releases the lease at once")
	var handoff time.Duration
	d.nextNote = func(t leaderTerm) string {
		handoff = t.at.Sub(resignAt)
		return fmt.Sprintf("handoff %s after Resign", fmtDur(handoff))
	}
	if _, err := d.awaitLeader(ctx, n, resigner); err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintln(resigner.stdin, "campaign"); err != nil {
		return 0, fmt.Errorf("telling %s to campaign: %w", resigner.label, err)
	}
	if err := d.steady(ctx, demoSteady); err != nil {
		return 0, err
	}
	d.lockRow("")
	return handoff, nil
}
