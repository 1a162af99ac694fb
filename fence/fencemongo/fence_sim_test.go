package fencemongo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// The fenced-register simulation: holders of successive fencing tokens
// run Fenced operations on a few _ids of one collection, on the test
// server, while the test holds some of their requests back and loses
// some replies; porcupine then checks that the history is linearizable
// against the sequential specification of fence_model_test.go, which
// states the docs' promise: no operation of a holder applies once one of
// a later holder has touched the _id, a miss by _id fences the _id, a
// delete keeps the fence. On FerretDB, where a Fenced promises nothing to
// operations that overlap (WithNonAtomicFence), one command at a time
// reaches the server; the operations still interleave command by
// command, and a request held back lands after later holders' requests.
//
//	go test -run TestFenceSimulation -v ./fence/fencemongo -fencesim.seeds=200
//	go test -run TestFenceSimulation -v ./fence/fencemongo -fencesim.seed=7
//
// A seed fixes what each holder does and which of its requests are held
// back or lose their reply, not how the goroutines interleave: a seed
// replays its faults, not always their outcome.

var (
	fenceSimSeeds = flag.Int("fencesim.seeds", 16, "fenced-register simulation: seeds to run")
	fenceSimSeed  = flag.Int64("fencesim.seed", -1, "fenced-register simulation: run only this seed")
)

// The shape of one seed's run.
const (
	simHolders      = 4  // holders running at once, each through a new token after every few operations
	simOpsPerHolder = 40 // operations each holder calls
	simHoldBackPct  = 20 // percent of operations with one request held back
	simLoseReplyPct = 10 // percent of operations whose context is cancelled before a request is sent or once its reply came
	simCheckTimeout = 60 * time.Second
)

var simIDs = []string{"a", "b", "c"}

func TestFenceSimulation(t *testing.T) {
	seeds := make([]int64, 0, *fenceSimSeeds)
	if *fenceSimSeed >= 0 {
		seeds = append(seeds, *fenceSimSeed)
	} else {
		for s := range *fenceSimSeeds {
			seeds = append(seeds, int64(s+1))
		}
	}
	h := newFenceSimHarness(t)
	var total fenceSimFigures
	for _, seed := range seeds {
		run := h.run(t, seed)
		total.add(run.figures)
		if verdict := run.check(t, true); verdict != porcupine.Ok {
			t.Fatalf("seed %d: porcupine says %s (go test -run TestFenceSimulation ./fence/fencemongo -fencesim.seed=%d)", seed, verdict, seed)
		}
	}
	t.Logf("fenced-register simulation: %d seeds, all linearizable; %s", len(seeds), total)
}

// fenceSimHarness is the driver client every seed's holders share, whose
// command monitor holds requests back, cancels contexts and, on FerretDB,
// lets one command at a time reach the server.
type fenceSimHarness struct {
	db *mongo.Database
	// oneAtATime: the server applies an update as a read and a later
	// write (FerretDB), where a Fenced promises nothing to operations
	// that overlap (WithNonAtomicFence); one command at a time makes each
	// command atomic, as on MongoDB, while the Fenced operations still
	// interleave command by command.
	oneAtATime bool
	server     sync.Mutex // held from a command's start to its reply, when oneAtATime
}

type simCallKey struct{}

func newFenceSimHarness(t *testing.T) *fenceSimHarness {
	h := &fenceSimHarness{oneAtATime: mongotest.Shared(t).IsFerretDB()}
	h.db = mongotest.NewDatabase(t, options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(ctx context.Context, _ *event.CommandStartedEvent) {
			if c, _ := ctx.Value(simCallKey{}).(*simCall); c != nil {
				c.started()
			}
			if h.oneAtATime {
				h.server.Lock()
			}
		},
		Succeeded: func(ctx context.Context, _ *event.CommandSucceededEvent) {
			if h.oneAtATime {
				h.server.Unlock()
			}
			if c, _ := ctx.Value(simCallKey{}).(*simCall); c != nil {
				c.answered()
			}
		},
		Failed: func(context.Context, *event.CommandFailedEvent) {
			if h.oneAtATime {
				h.server.Unlock()
			}
		},
	}))
	return h
}

// simCall is one operation's faults, and what became of them. Only its
// own goroutine, where the driver runs its commands, touches it.
type simCall struct {
	sim             *fenceSim
	holdAt, holdFor int  // hold back the holdAt-th request until holdFor other operations return (0: never)
	cancelAt        int  // cancel the context at the cancelAt-th request (0: never)
	cancelBefore    bool // before it is sent, not once its reply came
	cancel          context.CancelFunc

	sent      int // requests started
	held      bool
	cancelled bool
}

func (c *simCall) started() {
	c.sent++
	if c.sent == c.holdAt {
		c.sim.holdBack(c.holdFor)
		c.held = true
	}
	if c.sent == c.cancelAt && c.cancelBefore {
		c.cancel()
		c.cancelled = true
	}
}

func (c *simCall) answered() {
	if c.sent == c.cancelAt && !c.cancelBefore {
		c.cancel()
		c.cancelled = true
	}
}

// fenceSim is one seed's run.
type fenceSim struct {
	seed  int64
	coll  *mongo.Collection
	start time.Time
	token atomic.Int64 // the last token handed out

	mu       sync.Mutex
	cond     *sync.Cond
	returned int // operations returned
	running  int // holders not done
	heldNow  int // operations held back now
	history  []porcupine.Operation
	figures  fenceSimFigures
}

// holdBack waits until n more operations have returned, or until every
// holder still running is held back too.
func (s *fenceSim) holdBack(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	target := s.returned + n
	s.heldNow++
	s.cond.Broadcast()
	for s.returned < target && s.heldNow < s.running {
		s.cond.Wait()
	}
	s.heldNow--
}

func (h *fenceSimHarness) run(t *testing.T, seed int64) *fenceSim {
	ctx := testCtx(t, 5*time.Minute)
	s := &fenceSim{seed: seed, coll: h.db.Collection(fmt.Sprintf("fencesim%d", seed)), start: time.Now(), running: simHolders}
	s.cond = sync.NewCond(&s.mu)
	var wg sync.WaitGroup
	for i := range simHolders {
		wg.Go(func() {
			defer func() {
				s.mu.Lock()
				s.running--
				s.cond.Broadcast()
				s.mu.Unlock()
			}()
			s.holder(ctx, t, i, rand.New(rand.NewPCG(uint64(seed), uint64(i))))
		})
	}
	wg.Wait()
	s.figures.seeds = 1
	return s
}

// holder runs one holder's operations: a few under each token it takes,
// the next token being the next one handed out, so that tokens rise with
// time and a holder of an old one goes on beside those of newer ones, as
// a holder paused past its lease does.
func (s *fenceSim) holder(ctx context.Context, t *testing.T, client int, r *rand.Rand) {
	var f *Fenced
	left := 0
	read := map[string]int{} // the value this holder last saw of each _id
	for op := range simOpsPerHolder {
		if left == 0 {
			var err error
			if f, err = Fence(ctx, s.coll, uint64(s.token.Add(1)), fenceOpts(t)...); err != nil {
				t.Error(err)
				return
			}
			left = 1 + r.IntN(6)
		}
		left--
		in := fenceInput{id: simIDs[r.IntN(len(simIDs))], token: f.token, value: client*1000 + op + 1}
		switch p := r.IntN(100); {
		case p < 30:
			in.kind = simFind
		case p < 55:
			in.kind = simUpdate
			in.cas, in.expect = r.IntN(2) == 0, read[in.id]
		case p < 65:
			in.kind = simReplace
		case p < 85:
			in.kind = simInsert
		default:
			in.kind = simDelete
		}
		c := &simCall{sim: s}
		if r.IntN(100) < simHoldBackPct {
			c.holdAt, c.holdFor = 1+r.IntN(3), 1+r.IntN(6)
		}
		if r.IntN(100) < simLoseReplyPct {
			c.cancelAt, c.cancelBefore = 1+r.IntN(3), r.IntN(2) == 0
		}
		out, ok := s.call(ctx, t, f, in, c, r.IntN(2) == 0)
		if !ok {
			return
		}
		if in.kind == simFind && out.outcome == outOK {
			read[in.id] = out.value
		}
	}
}

// call runs in through f with c's faults and records it.
func (s *fenceSim) call(ctx context.Context, t *testing.T, f *Fenced, in fenceInput, c *simCall, eqForm bool) (fenceOutput, bool) {
	var filter bson.D
	if eqForm {
		filter = bson.D{{Key: "_id", Value: bson.D{{Key: "$eq", Value: in.id}}}}
	} else {
		filter = bson.D{{Key: "_id", Value: in.id}}
	}
	if in.cas {
		filter = append(filter, bson.E{Key: "v", Value: in.expect})
	}
	opCtx, cancel := context.WithCancel(context.WithValue(ctx, simCallKey{}, c))
	defer cancel()
	c.cancel = cancel

	var (
		out fenceOutput
		err error
		n   int64
	)
	call := time.Since(s.start).Nanoseconds()
	switch in.kind {
	case simFind:
		var d struct {
			V int `bson:"v"`
		}
		err = f.FindOne(opCtx, filter, &d)
		out.value = d.V
	case simUpdate:
		var res *mongo.UpdateResult
		if res, err = f.UpdateOne(opCtx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: in.value}}}}); err == nil {
			n = res.MatchedCount
		}
	case simReplace:
		var res *mongo.UpdateResult
		if res, err = f.ReplaceOne(opCtx, filter, bson.D{{Key: "v", Value: in.value}}); err == nil {
			n = res.MatchedCount
		}
	case simInsert:
		_, err = f.InsertOne(opCtx, bson.D{{Key: "_id", Value: in.id}, {Key: "v", Value: in.value}})
	case simDelete:
		var res *mongo.DeleteResult
		if res, err = f.DeleteOne(opCtx, filter); err == nil {
			n = res.DeletedCount
		}
	}
	ret := time.Since(s.start).Nanoseconds()
	out.n = n
	switch {
	case err == nil:
	case errors.Is(err, ErrFenced):
		out = fenceOutput{outcome: outFenced}
	case errors.Is(err, mongo.ErrNoDocuments):
		out = fenceOutput{outcome: outNoDoc}
	case mongo.IsDuplicateKeyError(err):
		out = fenceOutput{outcome: outDup}
	case c.cancelled && errors.Is(err, context.Canceled):
		out = fenceOutput{outcome: outUnknown}
	default:
		t.Errorf("seed %d: %v(%s) token %d: %v", s.seed, in.kind, in.id, in.token, err)
		return out, false
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = append(s.history, porcupine.Operation{ClientId: int(in.value / 1000), Input: in, Output: out, Call: call, Return: ret})
	if in.kind != simInsert && c.sent >= 2 {
		// Its first request matched nothing, and it raised the _id's
		// fence next (or tried to).
		s.history = append(s.history, porcupine.Operation{ClientId: int(in.value / 1000),
			Input: fenceInput{kind: simRaise, id: in.id, token: in.token}, Output: fenceOutput{}, Call: call, Return: ret})
		s.figures.raises++
	}
	s.figures.ops[in.kind][out.outcome]++
	if c.held {
		s.figures.heldBack++
		if out.outcome == outFenced {
			s.figures.heldFenced++
		}
	}
	if c.cancelled {
		s.figures.cancelled++
	}
	s.returned++
	s.cond.Broadcast()
	return out, true
}

// check runs porcupine over the history; on a violation, if dump, it
// writes the history and porcupine's visualization under the system's
// temp directory and says where.
func (s *fenceSim) check(t *testing.T, dump bool) porcupine.CheckResult {
	start := time.Now()
	verdict, info := porcupine.CheckOperationsVerbose(fenceModel, s.history, simCheckTimeout)
	t.Logf("seed %d: %d operations, porcupine %s in %v", s.seed, len(s.history), verdict, time.Since(start).Round(time.Millisecond))
	if verdict == porcupine.Ok || !dump {
		return verdict
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("dsync-fencesim-%d-%d", s.seed, time.Now().Unix()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Log(err)
		return verdict
	}
	if err := porcupine.VisualizePath(fenceModel, info, filepath.Join(dir, "history.html")); err != nil {
		t.Log(err)
	}
	var ops []porcupine.Operation
	for _, id := range simIDs {
		var mine []porcupine.Operation
		for _, op := range s.history {
			if op.Input.(fenceInput).id == id {
				mine = append(mine, op)
			}
		}
		if porcupine.CheckOperations(fenceModel, mine) {
			continue
		}
		t.Logf("seed %d: _id %q has no linearization", s.seed, id)
		ops = append(ops, mine...)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "%10d %10d holder %d  %s\n", op.Call/1000, op.Return/1000, op.ClientId,
			fenceModel.DescribeOperation(op.Input, op.Output))
	}
	// Where porcupine got stuck: the longest order it found that
	// explains a prefix of a history with no linearization.
	for _, part := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == 0 || len(longest) == len(ops) {
			continue
		}
		fmt.Fprintf(&b, "\nlongest linearizable order of %s's operations (%d), last ones:\n",
			longest[0].Input.(fenceInput).id, len(longest))
		for _, op := range longest[max(0, len(longest)-12):] {
			fmt.Fprintf(&b, "%10d %10d holder %d  %s\n", op.Call/1000, op.Return/1000, op.ClientId,
				fenceModel.DescribeOperation(op.Input, op.Output))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "history.txt"), []byte(b.String()), 0o644); err != nil {
		t.Log(err)
	}
	t.Logf("seed %d: history (call and return in µs) and porcupine's visualization in %s", s.seed, dir)
	return verdict
}

// fenceSimFigures counts what the runs did.
type fenceSimFigures struct {
	seeds      int
	ops        [simKinds][outcomes]int // by kind and outcome
	raises     int                     // operations that raised an _id's fence after a miss
	heldBack   int                     // operations with a request held back
	heldFenced int                     // of them, refused with ErrFenced
	cancelled  int                     // operations whose context was cancelled in flight
}

func (f *fenceSimFigures) add(g fenceSimFigures) {
	f.seeds += g.seeds
	for k := range f.ops {
		for o := range f.ops[k] {
			f.ops[k][o] += g.ops[k][o]
		}
	}
	f.raises += g.raises
	f.heldBack += g.heldBack
	f.heldFenced += g.heldFenced
	f.cancelled += g.cancelled
}

func (f fenceSimFigures) String() string {
	var b strings.Builder
	total, unknown := 0, 0
	for k := range simRaise {
		fmt.Fprintf(&b, "%v:", k)
		for o := range outcomes {
			if n := f.ops[k][o]; n > 0 {
				fmt.Fprintf(&b, " %d %v,", n, o)
				total += n
			}
		}
		unknown += f.ops[k][outUnknown]
		b.WriteString(" ")
	}
	return fmt.Sprintf("%d operations (%s); %d raised a fence after a miss, %d had a request held back "+
		"(%d of them refused with ErrFenced), %d a context cancelled in flight (%d of them with the outcome lost)",
		total, strings.TrimSuffix(b.String(), ", "), f.raises, f.heldBack, f.heldFenced, f.cancelled, unknown)
}
