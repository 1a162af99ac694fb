//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"strconv"

	"github.com/go-dsync/dsync/leader"
)

// --progress D (elect, partition): the command reports progress by
// writing to a pipe whose write end it gets as a file descriptor named by
// $DSYNC_PROGRESS_FD (3: the first after stdin, stdout and stderr). Each
// write is progress of the term or shard (leader.Progress), which sends
// nothing to the server. A term or shard whose command writes nothing
// for D ends as one whose lease is lost: the command gets SIGTERM, and
// SIGKILL after --grace.

// progressFD is the descriptor the command writes its progress to.
const progressFD = 3

// A progressPipe carries one run's progress reports from the command.
type progressPipe struct {
	r, w *os.File
	done chan struct{} // closed once the reader has stopped
}

// newProgressPipe makes the pipe of one run of the command.
func newProgressPipe() (*progressPipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &progressPipe{r: r, w: w, done: make(chan struct{})}, nil
}

// env is the variable that tells the command where to write.
func (p *progressPipe) env() string { return "DSYNC_PROGRESS_FD=" + strconv.Itoa(progressFD) }

// files are the command's extra files: the write end, as progressFD;
// none without a pipe (p nil).
func (p *progressPipe) files() []*os.File {
	if p == nil {
		return nil
	}
	return []*os.File{p.w}
}

// watch closes this process's copy of the write end (the command has its
// own), and reports each write as progress of ctx's term until the pipe
// ends: every copy of the write end closed, or close.
func (p *progressPipe) watch(ctx context.Context) {
	_ = p.w.Close()
	go func() {
		defer close(p.done)
		buf := make([]byte, 512)
		for {
			n, err := p.r.Read(buf)
			if n > 0 {
				leader.Progress(ctx)
			}
			if err != nil {
				return
			}
		}
	}()
}

// close ends the reading (a process the command started may hold the
// write end open still) and waits for the reader.
func (p *progressPipe) close() {
	_ = p.r.Close()
	<-p.done
}

// discard closes both ends of a pipe whose command did not start, if
// there is one.
func (p *progressPipe) discard() {
	if p == nil {
		return
	}
	_ = p.w.Close()
	_ = p.r.Close()
}

// lossWhy says why a term or shard whose context ctx is ended was lost.
func lossWhy(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), leader.ErrStalled) {
		return "its command reported no progress within --progress"
	}
	return "its lease could no longer be guaranteed"
}
