package dsyncmongo

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
)

// TestReadersCommands prints where the commands of RLock+RUnlock go when
// reading processes overlap on one key (bench/rwmutex-commands.md): n
// processes (n Clients, each with its own connection and default
// options, direct hints on loopback included) each RLock and RUnlock one
// key in a loop, together (n: the counts DSYNC_READERS lists; unset, the
// test skips), and the driver's command monitor attributes
// every command they send meanwhile to the step of the protocol that
// sent it, told by the engine's functions on the sending goroutine's
// stack (the monitor starts a command's event in that goroutine) and, for
// a claim's insert, by its reply. It asserts only what every run shows:
// each read completes, each RLock lands one claim insert and each RUnlock
// one release insert; the figures are measurements, not bounds.
func TestReadersCommands(t *testing.T) {
	env := os.Getenv("DSYNC_READERS")
	if env == "" {
		// A measurement, run by hand: under the race detector on a busy
		// CI runner its claims' timeouts would make its counts noise.
		t.Skip("a measurement: run with DSYNC_READERS=1,4,16 (bench/rwmutex-commands.md)")
	}
	var sizes []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("DSYNC_READERS=%q: want a list of counts such as 1,4,16", env)
		}
		sizes = append(sizes, n)
	}
	cols := make([]map[string]float64, len(sizes))
	for i, n := range sizes {
		cols[i] = readersCommands(t, n, max(480/n, 8))
	}
	var rows []string
	for _, c := range cols {
		for k := range c {
			if k != total && !slices.Contains(rows, k) {
				rows = append(rows, k)
			}
		}
	}
	slices.Sort(rows)
	var b strings.Builder
	fmt.Fprintf(&b, "\ncommands per RLock+RUnlock, by step\n\n| step |")
	for _, n := range sizes {
		fmt.Fprintf(&b, " %d |", n)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(sizes)) + "\n")
	for _, r := range append(rows, total) {
		fmt.Fprintf(&b, "| %s |", r)
		for _, c := range cols {
			fmt.Fprintf(&b, " %.2f |", c[r])
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
}

// total is the row of all commands.
const total = "**all commands**"

// readersCommands runs n reading processes for cycles RLock+RUnlock each
// and returns the commands they sent per RLock+RUnlock, by step.
func readersCommands(t *testing.T, n, cycles int) map[string]float64 {
	ctx := testCtx(t, 5*time.Minute)
	ps := newProcs(t, n, dsync.ClientWithHints(dsync.DefaultHintsListen, ""))
	rws := make([]*dsync.RWMutex, n)
	for i, p := range ps {
		rw, err := dsync.NewRWMutex(p.b.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		// One RLock+RUnlock first, alone: the setup (the session, the
		// key's gate, the hints' records) is not what is measured.
		if err := rw.RLockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.RUnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
		rws[i] = rw
	}
	var mu sync.Mutex
	counting := true
	steps := map[string]int{}
	pending := map[int64]string{} // claim inserts in flight, by request ID
	for _, p := range ps {
		p.cmd.mu.Lock()
		p.cmd.onStart = func(e *event.CommandStartedEvent) {
			s := stepOf(e)
			mu.Lock()
			defer mu.Unlock()
			if !counting {
				return
			}
			if strings.HasPrefix(s, claimInsert) {
				pending[e.RequestID] = s
				return
			}
			steps[s]++
		}
		p.cmd.onSucceeded = func(_ string, e *event.CommandSucceededEvent) {
			mu.Lock()
			defer mu.Unlock()
			if s, ok := pending[e.RequestID]; ok {
				delete(pending, e.RequestID)
				steps[s+insertOutcome(e.Reply)]++
			}
		}
		p.cmd.onFailed = func(e *event.CommandFailedEvent) {
			mu.Lock()
			defer mu.Unlock()
			if s, ok := pending[e.RequestID]; ok {
				delete(pending, e.RequestID)
				steps[s+", failed: "+failure(e.Failure)]++
			}
		}
		p.cmd.mu.Unlock()
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, rw := range rws {
		wg.Go(func() {
			<-start
			for range cycles {
				if err := rw.RLockContext(ctx); err != nil {
					t.Error(err)
					return
				}
				if err := rw.RUnlockContext(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	mu.Lock()
	counting = false
	for _, s := range pending { // inserts with no reply yet (none expected)
		steps[s+", no reply"]++
	}
	mu.Unlock()
	if t.Failed() {
		t.FailNow()
	}
	done := float64(n * cycles)
	landed := steps[claimInsert+", landed"] + steps[claimInsert+" chained on own release, held on insert"] + steps[claimInsert+" chained on own release, landed (shadow gone)"]
	if landed < n*cycles || steps[releaseInsert] < n*cycles {
		t.Errorf("%d readers: %d RLock+RUnlock, but %d claims and %d releases landed", n, n*cycles, landed, steps[releaseInsert])
	}
	out := map[string]float64{}
	all := 0
	for s, c := range steps {
		out[s] = float64(c) / done
		all += c
	}
	out[total] = float64(all) / done
	t.Logf("%d reading processes, %d RLock+RUnlock each: %.2f commands each", n, cycles, out[total])
	return out
}

// The steps of RLock and RUnlock, named after the engine's functions
// that send them (dsync/internal/queue).
const (
	claimInsert   = "RLock: claim insert (claimRun.round)"
	releaseInsert = "RUnlock: release marker insert (Engine.endMarker)"
)

// stepOf names the protocol step that sends e, from the functions of
// dsync on the stack of the goroutine that sends it.
func stepOf(e *event.CommandStartedEvent) string {
	stack := dsyncStack()
	has := func(f string) bool { return strings.Contains(stack, f) }
	coll, _ := e.Command.Index(0).Value().StringValueOK()
	switch {
	case has("queue.(*Engine).abandon"):
		return "RLock: withdraw a claim of unknown outcome (Engine.abandon)"
	case has("claimRun).round") && e.CommandName == "insert":
		if docs, err := e.Command.LookupErr("documents"); err == nil {
			if vals, _ := docs.Array().Values(); len(vals) == 3 {
				return claimInsert + " chained on own release"
			}
		}
		return claimInsert
	case has("climbFromBase"):
		return "RLock: climb to the queue's end after 4 lost races (claimRun.climbFromBase)"
	case has("baseOnNewest"):
		return "RLock: read the queue's end (claimRun.baseOnNewest)"
	case has("readBelow"):
		return "RLock walk: read the claim below (Engine.readBelow)"
	case has("endedIn"):
		return "RLock walk: read its end marker (Engine.endedIn)"
	case has("liveBelow"):
		return "RLock walk: read a live claim's session (Engine.liveBelow)"
	case has("confirmOwn"):
		return "RLock walk: read own claim back (Engine.confirmOwn)"
	case has("queue.(*Engine).Walk"):
		return "RLock walk: other (" + e.CommandName + ")"
	case has("queue.(*Resender)"):
		return "background: resend a withdrawal (Resender)"
	case has("queue.(*sessions).OpenSession"):
		return "RLock: open a session (sessions.OpenSession)"
	case has("endMarker"):
		return releaseInsert
	case has("queue.(*Engine).prune"):
		return "RUnlock: prune below the floor (Engine.prune)"
	case has("RWMutex).RLock"):
		return "RLock: other (" + e.CommandName + " " + coll + ", " + innermost(stack) + ")"
	case has("RWMutex).RUnlock"):
		return "RUnlock: other (" + e.CommandName + " " + coll + ", " + innermost(stack) + ")"
	case has("internal/lease"):
		return "background: lease renewal and revocation check"
	case has("internal/wake") || coll == DefaultCollection+eventsSuffix || e.CommandName == "getMore":
		return "background: wake-ups (events, feed)"
	case has("dsync/hint"):
		return "background: hints' peer record"
	}
	return "background: other (" + e.CommandName + " " + coll + ", " + innermost(stack) + ")"
}

// innermost is the innermost function of dsync's engine or package dsync
// in stack (dsyncStack).
func innermost(stack string) string {
	for f := range strings.Lines(stack) {
		if i := strings.Index(f, "/dsync/internal/"); i >= 0 {
			return strings.TrimSpace(f[i+len("/dsync/internal/"):])
		}
		if i := strings.Index(f, "/dsync/dsync."); i >= 0 {
			return strings.TrimSpace(f[i+len("/dsync/"):])
		}
	}
	return "?"
}

// dsyncStack is the functions of dsync's packages on the caller's stack,
// innermost first.
func dsyncStack() string {
	var pcs [128]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	var b strings.Builder
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "go-dsync/dsync/") {
			b.WriteString(f.Function)
			b.WriteByte('\n')
		}
		if !more {
			return b.String()
		}
	}
}

// insertOutcome says how a claim's ordered insert (the claim, its shadow,
// and, chained, the shadow of this process's release below) fared, from
// its reply: the first duplicate key stops it.
func insertOutcome(reply bson.Raw) string {
	dup := -1
	if we, err := reply.LookupErr("writeErrors"); err == nil {
		if vals, _ := we.Array().Values(); len(vals) > 0 {
			if i, ok := vals[0].Document().Lookup("index").AsInt64OK(); ok {
				dup = int(i)
			}
		}
	}
	switch dup {
	case -1:
		if n, _ := reply.Lookup("n").AsInt64OK(); n == 3 {
			return ", landed (shadow gone)"
		}
		return ", landed"
	case 0:
		return ", lost race (epoch taken)"
	case 2:
		return ", held on insert"
	}
	return fmt.Sprintf(", duplicate at %d", dup)
}

// failure is the kind of a command's failure: a timeout, or its error.
func failure(err error) string {
	if mongo.IsTimeout(err) {
		return "timeout"
	}
	msg := err.Error()
	if len(msg) > 60 {
		msg = msg[:60] + "…"
	}
	return msg
}
