//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// candidateCmd is one process of `dsync demo`, which starts it with this
// hidden subcommand. It campaigns for the election, takes turns on the
// lock, and reports on stdout, one event a line:
//
//	ready
//	elected TOKEN
//	lost CAUSE
//	resigned
//	hold TOKEN UNIXNANO      after the lock was acquired
//	done TOKEN UNIXNANO      before it is released
//	lostlock TOKEN UNIXNANO  the hold was lost
//
// It reads commands on stdin: "resign" gives leadership up, "campaign"
// campaigns again after that; end of input stops it.
var candidateCmd = &command{
	name: "_demo-candidate",
	run:  runCandidate,
}

// Timing of the demo's candidates.
const (
	demoPoll     = 100 * time.Millisecond // how often a waiter retries a held lease
	demoHold     = 150 * time.Millisecond // how long a candidate keeps the lock
	demoMaxPause = 400 * time.Millisecond // longest pause between holds
)

func runCandidate(g *globals, args []string) int {
	fs := newFlagSet("_demo-candidate", g)
	label := fs.String("label", "", "")
	ttl := fs.Duration("ttl", 2*time.Second, "")
	electionName := fs.String("election", "demo", "")
	lockName := fs.String("lock", "demo/jobs", "")
	if _, _, code, err := parseArgs(fs, "", args, false); err != nil {
		return code
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", args...)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := g.openSession(ctx, logger, *ttl, dsync.ClientWithPollInterval(demoPoll))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitFailure
	}
	defer s.close()
	members, err := g.memberStore(s.store)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitFailure
	}
	var term uint64 // set by OnElected, on the campaigning goroutine
	e, err := leader.NewElection(s.locks, *electionName, leader.WithMembers(members),
		leader.WithVersion(*label), leader.WithLogger(logger),
		leader.WithPollInterval(demoPoll),
		leader.OnElected(func(info leader.Info) { term = info.Token }))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitFailure
	}
	defer e.Close()
	// The same Client, so the same lease, as the election: one renewal a
	// round for both.
	mu, err := dsync.NewMutex(s.locks, *lockName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitFailure
	}

	commands := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			commands <- sc.Text()
		}
		cancel() // end of input: stop
	}()
	say("ready")

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		takeTurns(ctx, mu, say)
	}()

	campaign(ctx, e, &term, commands, say)
	wg.Wait()
	return exitOK
}

// campaign campaigns for e until ctx ends, and obeys the commands read:
// "resign" gives up a term, and then "campaign" campaigns again. term is
// the token of the term the campaign won, which e's OnElected sets.
func campaign(ctx context.Context, e *leader.Election, term *uint64, commands <-chan string, say func(string, ...any)) {
	for ctx.Err() == nil {
		lctx, err := e.Campaign(ctx)
		if err != nil {
			return // ctx ended
		}
		say("elected %d", *term)
		if !awaitResign(ctx, lctx, commands, say) {
			continue
		}
		if err := e.Resign(ctx); err == nil {
			say("resigned")
		}
		// Stand aside until told to campaign again, so that another
		// candidate takes over.
		awaitCommand(ctx, commands, "campaign")
	}
}

// awaitResign waits while the term, lctx's, lasts, for a command: true
// when it is "resign". It says when the term was lost.
func awaitResign(ctx, lctx context.Context, commands <-chan string, say func(string, ...any)) bool {
	select {
	case <-lctx.Done():
		if ctx.Err() == nil {
			say("lost %v", context.Cause(lctx))
		}
		return false
	case cmd := <-commands:
		return cmd == "resign"
	case <-ctx.Done():
		return false
	}
}

// awaitCommand waits for the command want, or for ctx to end.
func awaitCommand(ctx context.Context, commands <-chan string, want string) {
	for {
		select {
		case cmd := <-commands:
			if cmd == want {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// takeTurns locks, holds and unlocks mu again and again until ctx ends,
// reporting each hold.
func takeTurns(ctx context.Context, mu *dsync.Mutex, say func(string, ...any)) {
	for {
		if err := mu.LockContext(ctx); err != nil {
			return
		}
		token := mu.Token()
		say("hold %d %d", token, time.Now().UnixNano())
		t := time.NewTimer(demoHold)
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-mu.Lost():
		}
		t.Stop()
		select {
		case <-mu.Lost():
			say("lostlock %d %d", token, time.Now().UnixNano())
		default:
			say("done %d %d", token, time.Now().UnixNano())
		}
		mu.Unlock()
		pause := demoPoll + rand.N(demoMaxPause-demoPoll)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return
		}
	}
}
