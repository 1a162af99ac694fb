package apisim

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// A trace is what TestDebugSeed shows of a run beside its violations:
// each document that landed or was deleted, each session write and read,
// each request that failed (unreachable, given up before it landed or
// before its reply, its reply lost), each pause, step and emptying, and
// what each Client logged (loggerOf), in fake time. A request's line names the Client that sent it: "p2" for
// process 2's main Client, "p2e" for its elections' (construct.go). It is
// off (nil) in every other run.
type trace struct{ lines []string }

// tracing makes every world keep a trace (TestDebugSeed's).
var tracing bool

// tracef adds a line to w's trace, if it keeps one.
func (w *world) tracef(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.trace == nil {
		return
	}
	w.trace.lines = append(w.trace.lines, time.Now().Format(tf)+" "+fmt.Sprintf(format, args...))
}

// traceDoc is one document as the trace shows it.
func traceDoc(d driver.Doc) string {
	s := fmt.Sprintf("%s %s", d.Kind, d.ID)
	if d.Session != "" {
		s += " sess " + d.Session
	}
	if d.Nonce != "" {
		s += " nonce " + d.Nonce[:min(6, len(d.Nonce))]
	}
	if d.Kind == driver.KindClaim {
		s += fmt.Sprintf(" seg %d mode %v w %d/%d exp %s sent %s", d.Seg, d.Mode, d.Weight, d.Limit, d.Exp.Format(tf), d.Sent.Format(tf))
	}
	if d.Waiter != "" {
		s += " set " + d.Waiter
	}
	if d.Kind == driver.KindRelease && d.Clear {
		s += " clear"
	}
	return s
}

// loggerOf is the logger of a Client of p named name ("p1", "p1e"):
// with tracing on, what the library logs, Debug included, goes into the
// trace beside the requests (why a resume check did not decide, say);
// otherwise nothing.
func loggerOf(p *proc, name string) *slog.Logger {
	if p.w.trace == nil {
		return discard
	}
	return slog.New(slog.NewTextHandler(traceWriter{p.w, name}, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{} // the trace stamps each line itself
			}
			return a
		},
	}))
}

// traceWriter writes each log record of a Client into its world's trace.
type traceWriter struct {
	w    *world
	name string
}

func (t traceWriter) Write(b []byte) (int, error) {
	t.w.tracef("%s log %s", t.name, strings.TrimSpace(string(b)))
	return len(b), nil
}
