//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// hints is where the candidates listen for direct hints: --hints if
// given, else any loopback port (they all run on this machine).
func (d *demo) hints() string {
	if d.g.hints != "" {
		return d.g.hints
	}
	return "127.0.0.1:0"
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
		"--hints", d.hints(), "--hints-advertise", d.g.hintsAdvertise,
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
