package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/bench/harness"
	"github.com/go-dsync/dsync/dsync"
)

// What the scale scenario asks of dsync beyond locks: the status page of
// the dsync command, the documents of a namespace, and the compaction of
// idle keys in each series' namespace (compaction.go).

var (
	_ harness.StatusPager   = (*driver)(nil)
	_ harness.DocCounter    = (*driver)(nil)
	_ harness.IdleCompactor = (*driver)(nil)
)

// StatusPage runs `dsync status` (the command built from this tree, -cli)
// on the scenario's collections, with --limit if the command has it, and
// times it from start to exit, connecting included, as a user would.
func (d *driver) StatusPage(ctx context.Context, ns string, limit int, timeout time.Duration) (time.Duration, string, bool, error) {
	if d.cli == "" {
		return 0, "dsync status", false, errors.New("no dsync command given (dsyncbench -cli)")
	}
	args := []string{"status", "--db", d.db, "--collection", "locks_" + ns, "--members", "members_" + ns, "--timeout", timeout.String()}
	how := "dsync status"
	if d.cliHasLimit() {
		args = append(args, "--limit", strconv.Itoa(limit))
		how += fmt.Sprintf(" --limit %d", limit)
	} else {
		how += " (this tree's has no --limit: it lists every key)"
	}
	// The command's --timeout bounds its reads; the process gets a little
	// more to connect and exit.
	cctx, cancel := context.WithTimeout(ctx, timeout+15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, d.cli, args...)
	cmd.Env = append(os.Environ(), "MONGODB_URI="+d.uri)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		msg := stderr.String()
		if cctx.Err() != nil || took >= timeout || strings.Contains(msg, "deadline exceeded") {
			return took, how, true, nil
		}
		return took, how, false, fmt.Errorf("%v: %s", err, strings.TrimSpace(msg))
	}
	return took, how, false, nil
}

// cliHasLimit reports whether the dsync command's status takes --limit
// (a paged status, issue 25), from its help.
func (d *driver) cliHasLimit() bool {
	d.cliOnce.Do(func() {
		out, _ := exec.Command(d.cli, "status", "-h").CombinedOutput()
		d.cliLimit = bytes.Contains(out, []byte("--limit"))
	})
	return d.cliLimit
}

// CountDocs counts the documents of the scenario's collections.
func (d *driver) CountDocs(ctx context.Context, ns string) (map[string]int64, error) {
	c, err := mongo.Connect(options.Client().ApplyURI(d.uri))
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	db := c.Database(d.db)
	out := map[string]int64{}
	for name, coll := range map[string]string{
		"the lock collection":     "locks_" + ns,
		"the sessions collection": "locks_" + ns + "_sessions",
		"the events collection":   "locks_" + ns + "_events",
		"the directory of keys":   "locks_" + ns + "_keys",
	} {
		n, err := db.Collection(coll).CountDocuments(ctx, bson.D{})
		if err != nil {
			return nil, fmt.Errorf("counting %s: %w", coll, err)
		}
		out["documents in "+name] = n
	}
	return out, nil
}

// compaction is how each namespace of the scale scenario compacts.
type compaction struct {
	mu      sync.Mutex
	kept    map[string]bool // namespaces whose backends do not sweep
	compact map[string]bool // namespaces whose backends sweep after -idle-age
}

// KeepIdle turns the sweeps off in namespace ns: the scale scenario's
// keys in the collection.
func (d *driver) KeepIdle(ns string) {
	d.compaction.mu.Lock()
	defer d.compaction.mu.Unlock()
	if d.compaction.kept == nil {
		d.compaction.kept = map[string]bool{}
	}
	d.compaction.kept[ns] = true
}

// CompactIdle makes namespace ns's backends sweep keys idle for -idle-age
// (0: not in this run), with a bucket span of a quarter of it: the scale
// scenario's keys compacted.
func (d *driver) CompactIdle(ns string) time.Duration {
	if d.idleAge <= 0 {
		return 0
	}
	d.compaction.mu.Lock()
	defer d.compaction.mu.Unlock()
	if d.compaction.compact == nil {
		d.compaction.compact = map[string]bool{}
	}
	d.compaction.compact[ns] = true
	return d.idleAge
}

// compactionOptions are the Client options of namespace ns's Clients for
// its compaction (none: the library's defaults).
func (d *driver) compactionOptions(ns string) []dsync.ClientOption {
	d.compaction.mu.Lock()
	defer d.compaction.mu.Unlock()
	switch {
	case d.compaction.kept[ns]:
		return noCompaction()
	case d.compaction.compact[ns]:
		opts, _ := idleAgeOptions(d.idleAge) // checked by main
		return opts
	}
	return nil
}

// cliState is what the driver learnt of the dsync command.
type cliState struct {
	cliOnce  sync.Once
	cliLimit bool
}
