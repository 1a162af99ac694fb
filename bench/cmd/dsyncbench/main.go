// Command dsyncbench measures dsync over MongoDB: the figures of issue 7
// (uncontended latency and commands, handoff, failover, graceful leader
// handoff, load of idle waiters, renewal cost, contended throughput, and
// a race for a free lock), issue 25's scale, issue 26's RWMutex
// readers, Semaphore cost and handoff, and Once races, and issue 45's
// partitioned election (leader.Partition), issue 76's floor: the
// durable inserts per second the store commits (floor.go), and issue
// 77's lock sets (lockset.go). With
// DSYNCBENCH_TRACE set, every process writes a trace (trace.go). Its peers are measured by bench/peers; both
// write JSON that "dsyncbench report" turns into bench/RESULTS.md. See
// bench/README.md, or just run bash bench/run.sh.
//
// Usage:
//
//	dsyncbench [flags]                  measure dsync, write -out
//	dsyncbench serve [-stdin=false] DIR run FerretDB on a loopback port (prints its URI)
//	dsyncbench report -o FILE JSON...   write the results table
//
// The server is MONGODB_URI (or -uri) if set; otherwise an embedded
// FerretDB started in a child process for the run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-dsync/dsync/bench/harness"
	"github.com/go-dsync/dsync/bench/internal/ferret"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "serve":
			os.Exit(serve(os.Args[2:]))
		case "report":
			os.Exit(report(os.Args[2:]))
		}
	}
	os.Exit(measure())
}

func serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	stdin := fs.Bool("stdin", true, "exit when stdin reaches EOF (as well as on SIGTERM)")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: dsyncbench serve [-stdin=false] DATADIR")
		return 2
	}
	if err := ferret.Serve(context.Background(), fs.Arg(0), "127.0.0.1:0", os.Stdout, *stdin); err != nil {
		fmt.Fprintln(os.Stderr, "dsyncbench serve:", err)
		return 1
	}
	return 0
}

func report(args []string) int {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	out := fs.String("o", "bench/RESULTS.md", "file to write")
	cmd := fs.String("command", "bash bench/run.sh", "the command that produced the figures, for the header")
	_ = fs.Parse(args)
	var reports []*harness.Report
	for _, p := range fs.Args() {
		r, err := harness.ReadReport(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dsyncbench report:", err)
			return 1
		}
		reports = append(reports, r)
	}
	if err := os.WriteFile(*out, []byte(harness.Render(reports, *cmd)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "dsyncbench report:", err)
		return 1
	}
	// The scale scenario's curves, beside the tables that link to them.
	if svg, ok := harness.RenderScaleSVG(reports); ok {
		if err := os.WriteFile(filepath.Join(filepath.Dir(*out), harness.ScaleSVG), []byte(svg), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "dsyncbench report:", err)
			return 1
		}
	}
	return 0
}

func measure() int {
	uri := flag.String("uri", os.Getenv("MONGODB_URI"), "MongoDB URI (default $MONGODB_URI; empty: start an embedded FerretDB)")
	db := flag.String("db", "dsyncbench", "database for the lock collections")
	out := flag.String("out", "", "write the figures as JSON to this file (merged into it if it exists and -scenarios is set)")
	scenarios := flag.String("scenarios", "", "comma-separated scenarios to run (default all): "+strings.Join(harness.AllScenarios, ","))
	quick := flag.Bool("quick", false, "tiny sizes, to check that everything runs")
	runs := flag.Int("runs", 0, "repeated runs per figure (default 3)")
	rev := flag.String("rev", "", "revision of the library measured, for the report")
	poll := flag.Duration("poll", 0, "dsyncmongo.WithPollInterval (default: the library's, 250ms)")
	wakeups := flag.String("wakeups", "", "dsyncmongo.WithWakeups: on or off (default: the library's, on); off reports as dsync-polling")
	hints := flag.String("hints", "", "dsync.ClientWithHints on loopback: on or off (default: the library's, on where the server is reached over loopback); on adds -hints to the name reported (dsync-hints, dsync-polling-hints)")
	readLinger := flag.String("read-linger", "", "dsync.WithReadLinger on every RWMutex: on (the renew interval) or off (default: the library's, off); on adds -linger to the name reported (dsync-linger)")
	serverPID := flag.Int("server-pid", 0, "process id of the server behind -uri, to report its CPU while processes wait (Linux; the embedded FerretDB's is known)")
	waiters := flag.String("waiters", "", "comma-separated counts of waiting processes of the handoff scenario (default 1,4,16)")
	handoffs := flag.Int("handoffs", 0, "handoffs per run of the handoff, graceful and transfer scenarios (default 15)")
	settle := flag.Duration("settle", 0, "how long the handoff and graceful scenarios let the waiters start waiting before a run's first handoff (default 1s)")
	candidates := flag.String("candidates", "", "comma-separated counts of waiting candidates of the graceful and transfer scenarios (default 1)")
	renewLocks := flag.String("renew-locks", "", "comma-separated lock counts of the renewal scenario (default 1,100,10000)")
	scaleKeys := flag.String("scale-keys", "", "comma-separated idle key counts of the scale scenario, in each of its two series (default 100,1000,10000; none: skip that part)")
	scaleWaiters := flag.String("scale-waiters", "", "comma-separated waiter counts of the scale scenario (default 1,4,16,64; none: skip that part)")
	scaleWindow := flag.Duration("scale-window", 0, "how long the scale scenario counts what waiters send (default 2m)")
	scaleLoadBudget := flag.Duration("scale-load-budget", 0, "the scale scenario does not load a size of idle keys whose loading would take longer, estimated from the loadings before (default 20m)")
	scaleKeptMax := flag.Int("scale-kept-max", 0, "the scale scenario grows its series of keys in the collection (used within the idle age) to this many keys at most; 0: every size of -scale-keys")
	lockSetSets := flag.Int("lockset-sets", 0, "sets of the lockset scenario in all, each way, over the runs (default 10000)")
	cli := flag.String("cli", "", "the dsync command (go build ./cmd/dsync), whose status page the scale scenario times")
	idleAge := flag.Duration("idle-age", time.Minute, "the scale scenario's keys compacted: their backends compact keys idle for this long (dsyncmongo.WithIdleAge, with a bucket span of a quarter of it; at least 1m with the scenario's 15 s TTL; 0: that series is not measured). The other namespaces have the library's default")
	server := flag.String("server", "", "describe the server for the report (default: from its buildInfo), e.g. \"FerretDB 1.24 on PostgreSQL 15\" or \"Atlas M10, MongoDB 7.0\"")
	name := flag.String("name", "", "report the figures under this library name (default dsync, or dsync-polling with -wakeups off; -hints on adds -hints, -read-linger on -linger), e.g. to keep a before/after pair")
	flag.Parse()

	if *wakeups != "" && *wakeups != "on" && *wakeups != "off" {
		fmt.Fprintln(os.Stderr, "dsyncbench: -wakeups must be on or off")
		return 2
	}
	if *hints != "" && *hints != "on" && *hints != "off" {
		fmt.Fprintln(os.Stderr, "dsyncbench: -hints must be on or off")
		return 2
	}
	if *readLinger != "" && *readLinger != "on" && *readLinger != "off" {
		fmt.Fprintln(os.Stderr, "dsyncbench: -read-linger must be on or off")
		return 2
	}
	if _, err := idleAgeOptions(*idleAge); err != nil {
		fmt.Fprintln(os.Stderr, "dsyncbench:", err)
		return 2
	}
	d := &driver{uri: *uri, db: *db, rev: *rev, poll: *poll, wakeups: *wakeups, hints: *hints == "on", noHints: *hints == "off", readLinger: *readLinger == "on", name: *name, server: *server, cli: *cli, idleAge: *idleAge}
	if harness.IsChild() {
		code := harness.RunChild(d)
		processTracer().close()
		return code
	}
	if d.uri == "" {
		stop, err := d.startFerret(serverPID)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
	}
	// Children (re-executions of this binary) find the server here.
	os.Setenv("MONGODB_URI", d.uri)

	base := harness.Defaults
	if *quick {
		base = harness.Quick
	}
	opts := harness.Options{Runs: *runs, Handoffs: *handoffs, Settle: *settle, Log: os.Stderr, ServerPID: *serverPID, ScaleIdleWindow: *scaleWindow, ScaleLoadBudget: *scaleLoadBudget, ScaleKeptMax: *scaleKeptMax, LockSetSets: *lockSetSets}
	if *scenarios != "" {
		opts.Scenarios = strings.Split(*scenarios, ",")
	}
	if err := opts.SetCounts(*renewLocks, *scaleKeys, *scaleWaiters); err != nil {
		fmt.Fprintf(os.Stderr, "dsyncbench: %v\n", err)
		return 2
	}
	if *waiters != "" {
		n, err := harness.ParseCounts(*waiters)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dsyncbench: -waiters: %v\n", err)
			return 2
		}
		opts.Waiters = n
	}
	if *candidates != "" {
		n, err := harness.ParseCounts(*candidates)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dsyncbench: -candidates: %v\n", err)
			return 2
		}
		opts.Candidates = n
	}
	ctx := context.Background()
	start := time.Now()
	r := harness.Run(ctx, d, opts, base)
	fmt.Fprintf(os.Stderr, "dsyncbench: done in %v\n", time.Since(start).Round(time.Second))
	return writeReport(r, *out, *scenarios != "")
}

// startFerret starts an embedded FerretDB, its data in a temporary
// directory, for the run: d.uri is its URI, *pid its process. stop stops
// it and removes the directory.
func (d *driver) startFerret(pid *int) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "dsyncbench-ferretdb-")
	if err != nil {
		return nil, err
	}
	srv, err := ferret.Start("serve", filepath.Join(dir, "data"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	d.uri = srv.URI
	*pid = srv.PID()
	if os.Getenv(traceEnv) != "" {
		// The children's traces look at the server's threads and files.
		os.Setenv(traceServerEnv, fmt.Sprint(srv.PID()))
		os.Setenv(traceDirEnv, filepath.Join(dir, "data"))
	}
	fmt.Fprintln(os.Stderr, "dsyncbench: embedded FerretDB at", srv.URI)
	return func() {
		srv.Stop()
		os.RemoveAll(dir)
	}, nil
}

// writeReport writes r to the JSON file out, merged into the report there
// if some scenarios only were run (merge), or prints its table if out is
// empty. It returns the exit code.
func writeReport(r *harness.Report, out string, merge bool) int {
	if out == "" {
		fmt.Print(harness.Render([]*harness.Report{r}, strings.Join(os.Args, " ")))
		return 0
	}
	if merge {
		if old, err := harness.ReadReport(out); err == nil {
			old.Merge(r)
			r = old
		}
	}
	if err := harness.WriteReport(out, r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
