package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/go-dsync/dsync/bench/harness"
	dsyncevent "github.com/go-dsync/dsync/dsync/event"
)

// traceEnv, if set, is a path prefix: every process of the bench (each
// child of a scenario) writes a trace of its own to PREFIX.PID, for
// finding where a slow handoff's time went (bench/handoff-tails.md):
// every command with its start and duration, each Lock and Unlock, the
// lease's renewals as the Client's observer reports them, the machine's
// CPU pressure (/proc/pressure/cpu) at each Lock and Unlock, and at the
// end the process's GC pauses. Times are CLOCK_MONOTONIC in ns
// (harness.Mono), comparable across the processes. It costs the
// processes a buffered write per event, and is off unless set.
const traceEnv = "DSYNCBENCH_TRACE"

// tracer writes one process's trace.
type tracer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	f    *os.File
	wall time.Time // the wall clock at mono0: GC pauses come in wall time
	mono int64
}

var (
	traceOnce sync.Once
	theTracer *tracer
)

// processTracer returns this process's tracer, or nil when tracing is off.
func processTracer() *tracer {
	traceOnce.Do(func() {
		prefix := os.Getenv(traceEnv)
		if prefix == "" || !harness.IsChild() {
			return
		}
		f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
		if err != nil {
			fmt.Fprintln(os.Stderr, "dsyncbench: trace:", err)
			return
		}
		theTracer = &tracer{w: bufio.NewWriterSize(f, 1<<16), f: f, wall: time.Now(), mono: harness.Mono()}
	})
	return theTracer
}

// line writes one event, stamped now.
func (t *tracer) line(format string, a ...any) {
	if t == nil {
		return
	}
	now := harness.Mono()
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%d "+format+"\n", append([]any{now}, a...)...)
}

// mark writes a Lock or Unlock step with the CPU pressure so far, the
// time the threads of this process and of the server (traceServerEnv)
// ran and waited for a CPU so far, and when the server's SQLite files
// were last written (traceDirEnv).
func (t *tracer) mark(what string) {
	if t == nil {
		return
	}
	t.line("%s psi=%s self=%s server=%s db=%s", what, cpuPressure(), schedstat("self"), schedstat(os.Getenv(traceServerEnv)), dbWritten(os.Getenv(traceDirEnv)))
}

// The embedded server's process and data directory, for the trace: set
// by the measuring process for its children when it starts the server.
const (
	traceServerEnv = "DSYNCBENCH_TRACE_SERVER_PID"
	traceDirEnv    = "DSYNCBENCH_TRACE_SERVER_DIR"
)

// schedstat sums /proc/PID/task/*/schedstat: the µs the process's
// threads ran on a CPU and waited in a run queue, as "run,wait" ("?"
// unknown).
func schedstat(pid string) string {
	if pid == "" {
		return "?"
	}
	files, _ := filepath.Glob("/proc/" + pid + "/task/*/schedstat")
	var run, wait int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var r, w int64
		if _, err := fmt.Sscan(string(b), &r, &w); err == nil {
			run, wait = run+r, wait+w
		}
	}
	if len(files) == 0 {
		return "?"
	}
	return fmt.Sprintf("%d,%d", run/1000, wait/1000)
}

// dbWritten is, for the newest SQLite data file of dir, its name, the
// time it was last written (ns since the epoch: in WAL mode, only a
// checkpoint writes it) and its write-ahead log's size, as
// "name,mtime,walsize" ("?" unknown).
func dbWritten(dir string) string {
	if dir == "" {
		return "?"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.sqlite"))
	best, bestT := "", int64(0)
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.ModTime().UnixNano() > bestT {
			best, bestT = f, fi.ModTime().UnixNano()
		}
	}
	if best == "" {
		return "?"
	}
	wal := int64(-1)
	if fi, err := os.Stat(best + "-wal"); err == nil {
		wal = fi.Size()
	}
	return fmt.Sprintf("%s,%d,%d", filepath.Base(best), bestT, wal)
}

// cpuPressure is the total of /proc/pressure/cpu's "some" line: the µs
// during which some runnable task of the machine waited for a CPU.
func cpuPressure() string {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return "?"
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			return v
		}
	}
	return "?"
}

// close writes the GC pauses of the process and flushes the trace.
func (t *tracer) close() {
	if t == nil {
		return
	}
	var gc debug.GCStats
	gc.PauseQuantiles = nil
	debug.ReadGCStats(&gc)
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%d gc-count %d total-pause-us %d\n", harness.Mono(), gc.NumGC, gc.PauseTotal.Microseconds())
	for i, end := range gc.PauseEnd {
		mono := t.mono + int64(end.Sub(t.wall))
		fmt.Fprintf(t.w, "%d gc-pause-end us=%d\n", mono, gc.Pause[i].Microseconds())
	}
	_ = t.w.Flush()
	_ = t.f.Close()
}

// traceMonitor adds the trace's lines to a command monitor: a command's
// start (its collection, and the _id of its first document or filter),
// and its end with the round trip the driver measured.
func (t *tracer) traceMonitor(m *event.CommandMonitor) *event.CommandMonitor {
	if t == nil {
		return m
	}
	started, succeeded, failed := m.Started, m.Succeeded, m.Failed
	return &event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			t.line("cmd-start %d %s conn=%s %s", e.RequestID, e.CommandName, e.ConnectionID, commandTarget(e.CommandName, e.Command))
			started(ctx, e)
		},
		Succeeded: func(ctx context.Context, e *event.CommandSucceededEvent) {
			t.line("cmd-ok %d %s us=%d", e.RequestID, e.CommandName, e.Duration.Microseconds())
			succeeded(ctx, e)
		},
		Failed: func(ctx context.Context, e *event.CommandFailedEvent) {
			t.line("cmd-fail %d %s us=%d err=%q", e.RequestID, e.CommandName, e.Duration.Microseconds(), e.Failure)
			failed(ctx, e)
		},
	}
}

// commandTarget names what a command is about: its collection and the
// _id of its first document (insert) or of its filter or query.
func commandTarget(name string, cmd bson.Raw) string {
	coll := ""
	if v, err := cmd.LookupErr(name); err == nil {
		if s, ok := v.StringValueOK(); ok {
			coll = s
		}
	}
	id := ""
	for _, path := range [][]string{{"documents", "0", "_id"}, {"filter", "_id"}, {"query", "_id"}, {"updates", "0", "q", "_id"}} {
		if v, err := cmd.LookupErr(path...); err == nil {
			id = v.String()
			break
		}
	}
	if n, err := cmd.LookupErr("documents"); err == nil {
		if vals, err := n.Array().Values(); err == nil {
			id += fmt.Sprintf(" docs=%d", len(vals))
		}
	}
	return fmt.Sprintf("coll=%s id=%s", coll, id)
}

// observer reports the lease's renewals and failed renewals to the
// trace.
func (t *tracer) observer() dsyncevent.Observer {
	return dsyncevent.Observer{
		Renewed: func(r dsyncevent.Renewal) {
			t.line("renewed latency-us=%d headroom-ms=%d", r.Latency.Microseconds(), r.Headroom.Milliseconds())
		},
		RenewFailed: func(err error) { t.line("renew-failed %q", err) },
		Dropped:     func(n int) { t.line("observer-dropped %d", n) },
	}
}

// logger returns a logger whose records, debug ones included, go to the
// trace: the hint transport's and the wake-ups' (hints dropped or not
// sent, announcements that failed, the store's feed paused).
func (t *tracer) logger() *slog.Logger {
	return slog.New(traceHandler{t: t})
}

// traceHandler writes each log record as a trace line.
type traceHandler struct {
	t     *tracer
	attrs []slog.Attr
}

func (h traceHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h traceHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.String())
		return true
	})
	h.t.line("log %s %q%s", r.Level, r.Message, b.String())
	return nil
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{t: h.t, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h traceHandler) WithGroup(string) slog.Handler { return h }

// tracedMutex is a Mutex whose Lock and Unlock go to the trace.
type tracedMutex struct {
	mutex
	t *tracer
}

func (m tracedMutex) Lock(ctx context.Context) error {
	m.t.mark("lock-call")
	err := m.mutex.Lock(ctx)
	m.t.mark("lock-ret")
	return err
}

func (m tracedMutex) Unlock(ctx context.Context) error {
	m.t.mark("unlock-call")
	err := m.mutex.Unlock(ctx)
	m.t.mark("unlock-ret")
	return err
}
