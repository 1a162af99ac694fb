//go:build unix

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
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
brings its own server. It takes about 10 seconds.

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

func (d *demo) run(ctx context.Context) error {
	d.holds = make(map[uint64]*lockHold)
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

	// 1. An election.
	if _, err := d.awaitLeader(ctx, 0, nil); err != nil {
		return err
	}
	if err := d.steady(ctx, demoSteady); err != nil {
		return err
	}
	d.lockRow("")

	// 2. The leader dies.
	dead, err := d.awaitLeader(ctx, 0, nil)
	if err != nil {
		return err
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
		return err
	}
	if err := d.steady(ctx, demoSteady); err != nil {
		return err
	}
	d.lockRow(d.takeoverNote(dead))

	// 3. A graceful handoff.
	resigner, err := d.awaitLeader(ctx, 0, nil)
	if err != nil {
		return err
	}
	n = len(d.leaders)
	resignAt := time.Now()
	if _, err := fmt.Fprintln(resigner.stdin, "resign"); err != nil {
		return fmt.Errorf("telling %s to resign: %w", resigner.label, err)
	}
	d.row(resignAt, "resign", resigner.label, "", "Resign releases the lease at once")
	var handoff time.Duration
	d.nextNote = func(t leaderTerm) string {
		handoff = t.at.Sub(resignAt)
		return fmt.Sprintf("handoff %s after Resign", fmtDur(handoff))
	}
	if _, err := d.awaitLeader(ctx, n, resigner); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(resigner.stdin, "campaign"); err != nil {
		return fmt.Errorf("telling %s to campaign: %w", resigner.label, err)
	}
	if err := d.steady(ctx, demoSteady); err != nil {
		return err
	}
	d.lockRow("")

	// 4. What dsync status shows, then stop.
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

	var names, tokens []string
	for _, l := range d.leaders {
		names = append(names, l.p.label)
		tokens = append(tokens, strconv.FormatUint(l.token, 10))
	}
	fmt.Fprintln(d.out, "\nsummary")
	sum := newTable("", "", "")
	sum.add("failover after SIGKILL", fmtDur(failover), "the dead leader's lease had to expire first (ttl "+fmtDur(d.ttl)+")")
	sum.add("graceful handoff", fmtDur(handoff), "Resign released the lease, the next standby in line took it")
	sum.add("leaders", strings.Join(names, " → "), "terms "+strings.Join(tokens, " < ")+": fencing tokens only grow")
	sum.add("lock "+demoLock, fmt.Sprintf("%d holds", holds), "tokens in order, never two holders at once")
	sum.write(d.out, "  ")
	fmt.Fprintf(d.out, "\ndone in %s. Next: 'dsync server', then 'dsync lock NAME -- CMD' and 'dsync elect NAME -- CMD' (see 'dsync -h').\n",
		fmtDur(time.Since(d.start)))
	return nil
}

// row prints one line of the event table.
func (d *demo) row(at time.Time, what, who, token, note string) {
	d.printRow(fmtDur(at.Sub(d.start)), what, who, token, note)
}

func (d *demo) printRow(when, what, who, token, note string) {
	line := fmt.Sprintf("  %-7s  %-9s  %-7s  %6s  %s", when, what, who, token, note)
	fmt.Fprintln(d.out, strings.TrimRight(line, " "))
}

func (d *demo) rowElected(t leaderTerm, note string) {
	d.row(t.at, "elected", t.p.label, strconv.FormatUint(t.token, 10), note)
}

// lockRow sums up the holds of the lock since the last lock row.
func (d *demo) lockRow(note string) {
	tokens := d.phaseTokens
	d.phaseTokens = nil
	if len(tokens) == 0 {
		d.row(time.Now(), "lock", "", "", "no holds")
		return
	}
	slices.Sort(tokens)
	var who []string
	for _, t := range tokens {
		if l := d.holds[t].p.label; !slices.Contains(who, l) {
			who = append(who, l)
		}
	}
	slices.Sort(who)
	n := fmt.Sprintf("%d holds of %s, one at a time", len(tokens), demoLock)
	if note != "" {
		n += "; " + note
	}
	d.row(time.Now(), "lock", strings.Join(who, " "),
		fmt.Sprintf("%d-%d", tokens[0], tokens[len(tokens)-1]), n)
}

// takeoverNote says how long the lock stayed with a killed holder, if it
// held the lock when it died.
func (d *demo) takeoverNote(dead *proc) string {
	var next *lockHold // the first hold after the kill
	for _, h := range d.holds {
		if h.start.After(dead.killed) && (next == nil || h.token < next.token) {
			next = h
		}
	}
	if next == nil {
		return ""
	}
	prev, reported := d.holds[next.token-1]
	switch {
	case reported && prev.p == dead && prev.cut:
	case !reported && next.token > 1:
		// The dead process had acquired the lock but not said so yet.
	default:
		return ""
	}
	return fmt.Sprintf("%s died holding it; %s took it over after %s", dead.label, next.p.label, fmtDur(next.start.Sub(dead.killed)))
}

// spawn starts a candidate process: this binary, with the hidden
// subcommand.
func (d *demo) spawn(label string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	p := &proc{label: label, log: filepath.Join(d.dir, label+".log")}
	logf, err := os.Create(p.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	p.cmd = exec.Command(exe, "--uri", d.server.URI, "--db", d.g.db,
		"--collection", d.g.collection, "--elections", d.g.elections, "--members", d.g.members, "--wakeups="+strconv.FormatBool(d.g.wakeups),
		candidateCmd.name, "--label", label, "--ttl", d.ttl.String(),
		"--election", demoElection, "--lock", demoLock)
	p.cmd.Stderr = logf
	setDemoProcAttr(p.cmd)
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting candidate %s: %w", label, err)
	}
	d.procs = append(d.procs, p)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) > 0 {
				d.events <- procLine{p: p, at: time.Now(), fields: f}
			}
		}
		at := time.Now()
		err := p.cmd.Wait()
		d.events <- procLine{p: p, at: at, fields: []string{"exit", strconv.Itoa(exitStatus(p.cmd.ProcessState, err))}}
	}()
	return nil
}

// record updates the demo's view with ev.
func (d *demo) record(ev procLine) error {
	f := ev.fields
	num := func(i int) uint64 {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.ParseUint(f[i], 10, 64)
		return n
	}
	at := func(i int) time.Time { return time.Unix(0, int64(num(i))) }
	switch f[0] {
	case "ready":
		ev.p.ready = true
	case "elected":
		t := leaderTerm{p: ev.p, token: num(1), at: ev.at}
		d.leaders = append(d.leaders, t)
		d.leader = ev.p
		if d.live {
			note := ""
			if d.nextNote != nil {
				note, d.nextNote = d.nextNote(t), nil
			}
			d.rowElected(t, note)
		}
	case "resigned":
		if d.leader == ev.p {
			d.leader = nil
		}
	case "hold":
		h := &lockHold{p: ev.p, token: num(1), start: at(2)}
		if _, dup := d.holds[h.token]; dup {
			return fmt.Errorf("two holds of %s with token %d", demoLock, h.token)
		}
		d.holds[h.token] = h
		d.phaseTokens = append(d.phaseTokens, h.token)
	case "done", "lostlock":
		if h := d.holds[num(1)]; h != nil && h.p == ev.p {
			h.end = at(2)
		}
		if f[0] == "lostlock" {
			// Possible on an overloaded machine; the check of the holds
			// still applies.
			d.row(ev.at, "lock lost", ev.p.label, f[1], "no renewal confirmed in time: it stopped")
		}
	case "lost":
		if d.leader == ev.p {
			d.leader = nil
		}
		d.row(ev.at, "lost", ev.p.label, "", "leadership: no renewal confirmed in time")
	case "exit":
		ev.p.exited = true
		if d.leader == ev.p {
			d.leader = nil
		}
		ev.p.status, _ = strconv.Atoi(f[1])
		for _, h := range d.holds {
			if h.p == ev.p && h.end.IsZero() {
				h.end, h.cut = ev.at, true
			}
		}
		if ev.p.killed.IsZero() && ev.p.status != 0 {
			return fmt.Errorf("candidate %s exited with status %d", ev.p.label, ev.p.status)
		}
	}
	return nil
}

// await records events until done reports true, for at most timeout.
func (d *demo) await(ctx context.Context, timeout time.Duration, what string, done func() bool) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for !done() {
		select {
		case ev := <-d.events:
			if err := d.record(ev); err != nil {
				return err
			}
		case <-t.C:
			return fmt.Errorf("%w after %v waiting for %s", errTimedOut, timeout, what)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// awaitLeader waits until some candidate other than not leads, elected
// after the first n terms, and returns it.
func (d *demo) awaitLeader(ctx context.Context, n int, not *proc) (*proc, error) {
	err := d.await(ctx, 10*time.Second+3*d.ttl, "a leader", func() bool {
		return d.leader != nil && d.leader != not && len(d.leaders) > n
	})
	return d.leader, err
}

// steady records events for a while.
func (d *demo) steady(ctx context.Context, dur time.Duration) error {
	err := d.await(ctx, dur, "", func() bool { return false })
	if errors.Is(err, errTimedOut) {
		return nil
	}
	return err
}

// showStatus prints what `dsync status` shows now.
func (d *demo) showStatus(ctx context.Context) error {
	now := time.Now()
	client, db, err := d.g.connect(ctx)
	if err != nil {
		return err
	}
	defer disconnect(client)
	rctx, cancel := context.WithTimeout(ctx, d.g.timeout)
	defer cancel()
	d.row(now, "status", "", "", "what 'dsync status' shows now:")
	fmt.Fprintln(d.out)
	// Members heartbeat every ttl/3: one seen longer than ttl ago is gone.
	out := newTableSink(d.out, "      ", d.g.db+"."+d.g.collection, selection{})
	sum, err := readStatus(rctx, d.g, db, selection{}, d.ttl, out)
	if err == nil {
		err = out.done(sum)
	}
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	fmt.Fprintln(d.out)
	return nil
}

// stopAll closes the candidates' input, which makes them resign, release
// and exit, and waits for them.
func (d *demo) stopAll(ctx context.Context) error {
	var running []string
	for _, p := range d.procs {
		if !p.exited && p.killed.IsZero() {
			running = append(running, p.label)
		}
		_ = p.stdin.Close()
	}
	for _, p := range d.procs {
		if p.exited {
			continue
		}
		if err := d.await(ctx, 10*time.Second+2*d.ttl, "the processes to exit", func() bool { return p.exited }); err != nil {
			return err
		}
	}
	d.row(time.Now(), "stopped", strings.Join(running, " "), "", "closed their elections and exited")
	return nil
}

// checkLock checks that the holds of the lock, in order of their tokens,
// never overlapped, and returns their number.
func (d *demo) checkLock() (int, error) {
	tokens := make([]uint64, 0, len(d.holds))
	for t := range d.holds {
		tokens = append(tokens, t)
	}
	slices.Sort(tokens)
	var prev *lockHold
	for _, t := range tokens {
		h := d.holds[t]
		if h.end.IsZero() {
			return 0, fmt.Errorf("the hold of %s with token %d by %s never ended", demoLock, t, h.p.label)
		}
		if prev != nil && h.start.Before(prev.end) {
			return 0, fmt.Errorf("two holders of %s at once: %s (token %d) until %s, %s (token %d) from %s",
				demoLock, prev.p.label, prev.token, prev.end.Format(time.StampMicro), h.p.label, h.token, h.start.Format(time.StampMicro))
		}
		prev = h
	}
	return len(tokens), nil
}

// killAll kills the candidates still running and waits for them.
func (d *demo) killAll() {
	for _, p := range d.procs {
		if !p.exited {
			_ = p.cmd.Process.Kill()
		}
	}
	for _, p := range d.procs {
		for !p.exited {
			ev := <-d.events
			if ev.fields[0] == "exit" {
				ev.p.exited = true
			}
		}
	}
}

// cleanup stops the server and removes the temporary directory.
func (d *demo) cleanup() {
	if d.server != nil {
		if err := d.server.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "dsync demo: %v\n", err)
		}
	}
	if d.dir != "" && os.Getenv("DSYNC_DEMO_KEEP") == "" {
		_ = os.RemoveAll(d.dir)
	}
}

// printLogs shows the candidates' stderr, after a failure.
func (d *demo) printLogs() {
	for _, p := range d.procs {
		b, err := os.ReadFile(p.log)
		if err != nil || len(b) == 0 {
			continue
		}
		const tail = 2000
		if len(b) > tail {
			b = b[len(b)-tail:]
		}
		fmt.Fprintf(os.Stderr, "--- stderr of %s:\n%s", p.label, b)
	}
}

var errTimedOut = errors.New("timed out")
