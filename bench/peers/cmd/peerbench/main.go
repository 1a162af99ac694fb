// Command peerbench measures the libraries users compare dsync with, in
// the same scenarios as dsyncbench (see bench/harness):
//
//   - mongo-lock: github.com/square/mongo-lock on the same MongoDB (or
//     FerretDB) server as dsync; its shared locks are the reader/writer
//     lock's read side and a semaphore's units;
//   - redsync: github.com/go-redsync/redsync/v4 on a Redis server (a
//     mutex only);
//   - etcd: go.etcd.io/etcd/client/v3/concurrency on an etcd server, and
//     the RWMutex of go.etcd.io/etcd/client/v3/experimental/recipes.
//
// A library without a primitive of the family scenarios (rwmutex,
// semaphore, once) is reported as lacking it, with the reason its driver's
// Lacks gives.
//
// It lives in its own module so that none of them enters dsync's go.mod.
// bench/run.sh starts the servers and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-dsync/dsync/bench/harness"
)

func main() { os.Exit(run()) }

func run() int {
	lib := flag.String("lib", "", "library to measure: mongo-lock, redsync or etcd")
	mongoURI := flag.String("mongo-uri", os.Getenv("MONGODB_URI"), "MongoDB URI for mongo-lock (default $MONGODB_URI)")
	db := flag.String("db", "peerbench", "database for mongo-lock's collections")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis address for redsync")
	etcdAddr := flag.String("etcd", "127.0.0.1:2379", "etcd client endpoints for etcd, comma-separated")
	out := flag.String("out", "", "write the figures as JSON to this file (merged into it if it exists and -scenarios is set)")
	scenarios := flag.String("scenarios", "", "comma-separated scenarios to run (default all): "+strings.Join(harness.AllScenarios, ","))
	quick := flag.Bool("quick", false, "tiny sizes, to check that everything runs")
	runs := flag.Int("runs", 0, "repeated runs per figure (default 3)")
	renewLocks := flag.String("renew-locks", "", "comma-separated lock counts of the renewal scenario (default 1,100,10000)")
	// The idle-key part of the scale scenario: the peers run its series
	// of keys in the collection (they compact nothing; redsync and etcd
	// delete a lock's key at Unlock). mongo-lock finds a lock by
	// resource, which FerretDB answers by reading the whole collection,
	// so its loading slows as the collection grows: a size whose loading
	// would take longer than the scenario allows is not measured.
	scaleKeys := flag.String("scale-keys", "", "comma-separated idle key counts of the scale scenario (default 100,1000,10000; none: skip that part)")
	scaleWaiters := flag.String("scale-waiters", "", "comma-separated waiter counts of the scale scenario (default 1,4,16,64; none: skip that part)")
	scaleWindow := flag.Duration("scale-window", 0, "how long the scale scenario counts what waiters send (default 2m)")
	scaleLoadBudget := flag.Duration("scale-load-budget", 0, "the scale scenario does not load a size of idle keys whose loading would take longer, estimated from the loadings before (default 20m)")
	scaleKeptMax := flag.Int("scale-kept-max", 0, "the scale scenario grows its series of keys in the collection (used within the idle age) to this many keys at most; 0: every size of -scale-keys")
	serverPID := flag.Int("server-pid", 0, "process id of the library's server, to report its CPU while processes wait (Linux)")
	flag.Parse()

	var d harness.Driver
	switch *lib {
	case "mongo-lock":
		d = &mongoLockDriver{uri: *mongoURI, db: *db}
	case "redsync":
		d = &redsyncDriver{addr: *redisAddr}
	case "etcd":
		d = &etcdDriver{endpoints: strings.Split(*etcdAddr, ",")}
	default:
		fmt.Fprintln(os.Stderr, "peerbench: -lib must be mongo-lock, redsync or etcd")
		return 2
	}
	if harness.IsChild() {
		return harness.RunChild(d)
	}

	base := harness.Defaults
	if *quick {
		base = harness.Quick
	}
	opts := harness.Options{Runs: *runs, Log: os.Stderr, ServerPID: *serverPID, ScaleIdleWindow: *scaleWindow, ScaleLoadBudget: *scaleLoadBudget, ScaleKeptMax: *scaleKeptMax}
	if *scenarios != "" {
		opts.Scenarios = strings.Split(*scenarios, ",")
	}
	if err := opts.SetCounts(*renewLocks, *scaleKeys, *scaleWaiters); err != nil {
		fmt.Fprintf(os.Stderr, "peerbench: %v\n", err)
		return 2
	}
	start := time.Now()
	r := harness.Run(context.Background(), d, opts, base)
	if n, ok := d.(interface{ notes() []string }); ok {
		r.Notes = append(n.notes(), r.Notes...)
	}
	fmt.Fprintf(os.Stderr, "peerbench %s: done in %v\n", *lib, time.Since(start).Round(time.Second))
	if *out == "" {
		fmt.Print(harness.Render([]*harness.Report{r}, strings.Join(os.Args, " ")))
		return 0
	}
	if *scenarios != "" {
		if old, err := harness.ReadReport(*out); err == nil {
			old.Merge(r)
			r = old
		}
	}
	if err := harness.WriteReport(*out, r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// moduleVersion returns the version of module path in this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				if m.Replace != nil {
					return m.Replace.Version
				}
				return m.Version
			}
		}
	}
	return "(unknown version)"
}

// jitter returns a uniform random duration in [lo, hi).
func jitter(lo, hi time.Duration) time.Duration {
	return lo + rand.N(hi-lo)
}
