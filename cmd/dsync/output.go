//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// A table prints rows in aligned columns. Columns whose header starts
// with '>' are right-aligned (the '>' is not printed). A table whose
// headers are all empty prints no header line.
type table struct {
	header []string
	right  []bool
	rows   [][]string
}

func newTable(header ...string) *table {
	t := &table{header: make([]string, len(header)), right: make([]bool, len(header))}
	for i, h := range header {
		t.header[i], t.right[i] = strings.CutPrefix(h, ">")
	}
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table, each line prefixed by indent. Trailing empty
// cells leave no trailing blanks.
func (t *table) write(w io.Writer, indent string) {
	width := make([]int, len(t.header))
	for _, r := range append([][]string{t.header}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], displayWidth(c))
		}
	}
	rows := t.rows
	if strings.Join(t.header, "") != "" {
		rows = append([][]string{t.header}, rows...)
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(indent)
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(padCell(c, width[i], t.right[i]))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		b.Reset()
	}
}

// A reporter prints dsync's own messages on stderr, one line each. Errors
// the libraries handle themselves (renewals that failed, acquire attempts
// retried) are rate-limited unless verbose, so a server outage gives a
// line after 5 s, then at intervals that double to 2 minutes while it
// lasts, rather than a wall of them.
type reporter struct {
	w       io.Writer
	verbose bool

	mu         sync.Mutex
	last       time.Time     // when a problem was last printed
	seen       time.Time     // when one was last reported, printed or not
	every      time.Duration // the interval between printed problems now
	suppressed int
	muted      bool
}

// problemEvery is the first interval between printed background problems,
// problemEveryMax the longest: it doubles while problems keep coming, and
// starts again after a quiet spell of twice the interval.
const (
	problemEvery    = 5 * time.Second
	problemEveryMax = 2 * time.Minute
)

// say prints a message always.
func (r *reporter) say(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "dsync: "+format+"\n", args...)
}

// info prints a message with -v only.
func (r *reporter) info(format string, args ...any) {
	if r.verbose {
		r.say(format, args...)
	}
}

// mute stops background errors from being printed: after a loss was
// reported, the failed renewals still in flight say nothing new.
func (r *reporter) mute() {
	r.mu.Lock()
	r.muted = true
	r.mu.Unlock()
}

// problem prints a background error, rate-limited.
func (r *reporter) problem(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.muted && !r.verbose {
		return
	}
	now := time.Now()
	if r.every == 0 || !r.seen.IsZero() && now.Sub(r.seen) > 2*r.every {
		r.every = problemEvery // the first, or after a quiet spell
	}
	r.seen = now
	if !r.verbose && !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.suppressed++
		return
	}
	if r.suppressed > 0 {
		msg = fmt.Sprintf("%s (and %d more like it)", msg, r.suppressed)
		r.every = min(2*r.every, problemEveryMax)
	}
	r.last, r.suppressed = now, 0
	fmt.Fprintf(r.w, "dsync: %s\n", msg)
}

// logger returns a slog.Logger for the libraries that reports through r.
func (r *reporter) logger() *slog.Logger { return slog.New(reportHandler{r: r}) }

// reportHandler turns the libraries' Warn records into problem lines:
// "dsync" key=k err=e becomes the error alone, which names the key.
type reportHandler struct {
	r     *reporter
	attrs []slog.Attr
}

func (h reportHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h reportHandler) Handle(_ context.Context, rec slog.Record) error {
	var errText string
	var rest []string
	lost := false
	add := func(a slog.Attr) bool {
		if a.Key == "err" {
			errText = a.Value.String()
			if err, ok := a.Value.Any().(error); ok && errors.Is(err, dsync.ErrLost) {
				lost = true
			}
		} else if a.Key != "key" && a.Key != "election" {
			rest = append(rest, a.Key+"="+a.Value.String())
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	rec.Attrs(add)
	if lost {
		return nil // lock and elect say so themselves, and what they do about it
	}
	msg := rec.Message
	switch {
	case msg == "dsync" && errText != "":
		msg = errText
	case errText != "":
		msg += ": " + errText
	}
	if len(rest) > 0 {
		msg += " (" + strings.Join(rest, " ") + ")"
	}
	msg = strings.TrimPrefix(msg, "dsync: ")
	h.r.problem(tidy(msg))
	return nil
}

func (h reportHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return reportHandler{r: h.r, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h reportHandler) WithGroup(string) slog.Handler { return h }
