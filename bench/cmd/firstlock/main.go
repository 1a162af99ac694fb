// Command firstlock measures what a fresh process pays for its first
// Lock: one fresh Client at a time (a new connection, a new store, a new
// Client: a cron job's process) locks and unlocks a key that has history,
// beside idle keys, and the driver's command monitor counts what it sends,
// by command and by cause. It prints one line per fresh Client, or with
// -summary, the p50 and the commands by cause of the lines read on stdin.
//
// Usage:
//
//	firstlock -uri URI -db DB -load 100            lock and unlock job-0..job-99 once
//	firstlock -uri URI -db DB -n 5 -label after    5 fresh Clients, one line each
//	firstlock -summary < lines                     p50s and causes, by label
//
// It uses only the exported API, so that the same file builds in a tree of
// an earlier commit: bench/first-lock.md runs it before and after a change,
// interleaved against one server.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
)

// sample is one fresh Client's first Lock+Unlock.
type sample struct {
	Label string `json:"label"`
	// LockMS: from the new connection to Lock's return; UnlockMS: to
	// Unlock's return; CloseMS: to Close's return.
	LockMS   float64 `json:"lock_ms"`
	UnlockMS float64 `json:"unlock_ms"`
	CloseMS  float64 `json:"close_ms"`
	// Lock, Unlock, Close: the commands sent in each phase, by cause.
	Lock   map[string]int `json:"lock"`
	Unlock map[string]int `json:"unlock"`
	Close  map[string]int `json:"close"`
}

func main() {
	uri := flag.String("uri", "", "the server")
	dbName := flag.String("db", "firstlock", "the database")
	load := flag.Int("load", 0, "lock and unlock job-0..job-N-1 once, then exit")
	keys := flag.Int("keys", 100, "the fresh Clients lock a random one of job-0..job-N-1")
	n := flag.Int("n", 5, "fresh Clients, one at a time")
	label := flag.String("label", "", "the label of the lines printed")
	hintsOff := flag.Bool("hints-off", false, `ClientWithHints("", ""): no direct hints`)
	summary := flag.Bool("summary", false, "summarize the lines on stdin")
	flag.Parse()
	if *summary {
		if err := summarize(os.Stdin, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var opts []dsync.ClientOption
	if *hintsOff {
		opts = append(opts, dsync.ClientWithHints("", ""))
	}
	if *load > 0 {
		if err := loadKeys(ctx, *uri, *dbName, *load); err != nil {
			log.Fatal(err)
		}
		return
	}
	out := json.NewEncoder(os.Stdout)
	for range *n {
		s, err := fresh(ctx, *uri, *dbName, fmt.Sprintf("job-%d", rand.N(*keys)), opts)
		if err != nil {
			log.Fatal(err)
		}
		s.Label = *label
		if err := out.Encode(s); err != nil {
			log.Fatal(err)
		}
	}
}

// loadKeys locks and unlocks job-0..job-n-1 once through one Client.
func loadKeys(ctx context.Context, uri, db string, n int) error {
	mc, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer mc.Disconnect(context.Background())
	st, err := dsyncmongo.NewStore(mc.Database(db), dsyncmongo.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	c, err := dsync.NewClient(st, dsync.ClientWithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range n {
		m, err := dsync.NewMutex(c, fmt.Sprintf("job-%d", i))
		if err != nil {
			return err
		}
		if err := m.LockContext(ctx); err != nil {
			return err
		}
		if err := m.UnlockContext(ctx); err != nil {
			return err
		}
	}
	return nil
}

// fresh times a fresh Client's first Lock+Unlock of key and counts its
// commands.
func fresh(ctx context.Context, uri, db, key string, opts []dsync.ClientOption) (sample, error) {
	s := sample{Lock: map[string]int{}, Unlock: map[string]int{}, Close: map[string]int{}}
	var mu sync.Mutex
	phase := s.Lock
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		c := cause(e)
		mu.Lock()
		phase[c]++
		mu.Unlock()
	}}
	setPhase := func(p map[string]int) {
		mu.Lock()
		phase = p
		mu.Unlock()
	}
	t0 := time.Now()
	mc, err := mongo.Connect(options.Client().ApplyURI(uri).SetMonitor(mon))
	if err != nil {
		return s, err
	}
	defer mc.Disconnect(context.Background())
	st, err := dsyncmongo.NewStore(mc.Database(db), dsyncmongo.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return s, err
	}
	c, err := dsync.NewClient(st, append([]dsync.ClientOption{dsync.ClientWithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		return s, err
	}
	m, err := dsync.NewMutex(c, key)
	if err != nil {
		c.Close()
		return s, err
	}
	err = m.LockContext(ctx)
	s.LockMS = ms(time.Since(t0))
	setPhase(s.Unlock)
	if err == nil {
		err = m.UnlockContext(ctx)
	}
	s.UnlockMS = ms(time.Since(t0))
	setPhase(s.Close)
	c.Close()
	s.CloseMS = ms(time.Since(t0))
	setPhase(map[string]int{}) // the driver's own, at Disconnect
	return s, err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cause names what a command is for, from the command alone.
func cause(e *event.CommandStartedEvent) string {
	coll, _ := e.Command.Index(0).Value().StringValueOK()
	name := e.CommandName
	switch {
	case name == "whatsmyuri" || name == "explain":
		return name + " (hints: is the server on loopback)"
	case strings.Contains(string(e.Command), "#hint/"):
		return name + " " + coll + " (hints: key or peer record)"
	case name == "findAndModify" && lookupString(e.Command, "query", "_id") == "#clock":
		return "findAndModify #clock (server-time sample)"
	case name == "find" && lookupString(e.Command, "filter", "_id") == "#protocol":
		return "find #protocol (bucket span, segment)"
	case name == "insert":
		return "insert " + coll + " (" + insertKinds(e.Command) + ")"
	case name == "find" && strings.HasSuffix(coll, "_sessions"):
		return "find " + coll + " (sessions, revocations)"
	case name == "find" && strings.HasSuffix(coll, "_records"):
		return "find " + coll + " (old records)"
	case name == "find":
		return "find " + coll + " (a document by _id)"
	}
	return strings.TrimSpace(name + " " + coll)
}

func lookupString(d bson.Raw, path ...string) string {
	v, err := d.LookupErr(path...)
	if err != nil {
		return ""
	}
	s, _ := v.StringValueOK()
	return s
}

// insertKinds is the kinds of the documents an insert carries (claim,
// gate, release, ...), or "session" for one without a kind.
func insertKinds(cmd bson.Raw) string {
	docs, err := cmd.LookupErr("documents")
	if err != nil {
		return "?"
	}
	vals, _ := docs.Array().Values()
	seen := map[string]bool{}
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			continue
		}
		k := lookupString(d, "kind")
		switch {
		case k != "":
		case d.Lookup("expiresAt").Type != 0:
			k = "session"
		case d.Lookup("created").Type != 0:
			k = "directory"
		default:
			k = "other"
		}
		seen[k] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), "+")
}

// summarize reads samples and prints, by label, the p50 of each time and
// the mean commands per phase and cause.
func summarize(r io.Reader, w io.Writer) error {
	by := map[string][]sample{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			continue // not a sample line
		}
		if _, ok := by[s.Label]; !ok {
			order = append(order, s.Label)
		}
		by[s.Label] = append(by[s.Label], s)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, l := range order {
		ss := by[l]
		k := float64(len(ss))
		fmt.Fprintf(w, "%s: %d fresh Clients: first Lock p50 %.1f ms, Lock+Unlock p50 %.1f ms, Close p50 %.1f ms\n", l, len(ss),
			p50(ss, func(s sample) float64 { return s.LockMS }), p50(ss, func(s sample) float64 { return s.UnlockMS }),
			p50(ss, func(s sample) float64 { return s.CloseMS }))
		for _, ph := range []struct {
			name string
			get  func(sample) map[string]int
		}{{"Lock", func(s sample) map[string]int { return s.Lock }}, {"Unlock", func(s sample) map[string]int { return s.Unlock }}, {"Close", func(s sample) map[string]int { return s.Close }}} {
			sum := map[string]int{}
			total := 0
			for _, s := range ss {
				for c, n := range ph.get(s) {
					sum[c] += n
					total += n
				}
			}
			fmt.Fprintf(w, "  %s: %.2f commands\n", ph.name, float64(total)/k)
			for _, c := range slices.Sorted(maps.Keys(sum)) {
				fmt.Fprintf(w, "    %5.2f  %s\n", float64(sum[c])/k, c)
			}
		}
	}
	return nil
}

func p50(ss []sample, f func(sample) float64) float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	return v[(len(v)-1)/2]
}
