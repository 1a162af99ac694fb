//go:build unix

package pgserve

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// holdMarker is what Hold has psql print once sql has run.
const holdMarker = "pgserve: held"

// Hold runs sql in database db in a session of its own and keeps the
// session open until release is called: a transaction it began stays
// open, and a lock it took stays taken. release ends the session (an open
// transaction is rolled back) and waits for psql to exit. Hold returns
// once sql has run, or fails if it did not within a minute.
func (p *Server) Hold(db, sql string) (release func(), err error) {
	cmd := p.psql(db)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	release = func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}
	if _, err := fmt.Fprintf(stdin, "%s\n\\echo '%s'\n", sql, holdMarker); err != nil {
		release()
		return nil, fmt.Errorf("psql: %v: %s", err, stderr.String())
	}
	held := make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if lines.Text() == holdMarker {
				held <- nil
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		held <- fmt.Errorf("psql ended before %q ran", sql)
	}()
	select {
	case err = <-held:
	case <-time.After(time.Minute):
		err = fmt.Errorf("psql: %q did not run within a minute", sql)
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	return release, nil
}
