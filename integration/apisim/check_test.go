package apisim

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// hold is a hold of key from start to end (its holder's Unlock), valid
// until deadline, whose claim landed when it was called.
func hold(id int, prim Prim, key string, token uint64, start, end, deadline int) *Hold {
	return &Hold{ID: id, Proc: id, Prim: prim, Key: key, Token: token,
		Call: at(start - 10), Landed: at(start - 10), Start: at(start), Ended: at(end), Deadline: at(deadline)}
}

// reread is a read hold of the RWMutex value v, whose read linger is on.
func reread(id int, v string, token uint64, start, end int) *Hold {
	h := hold(id, PrimRead, "rw", token, start, end, 900)
	h.Value = v
	return h
}

// checkCase is a history and how many violations of a promise a checker
// must find in it.
type checkCase struct {
	name string
	h    History
	want int
}

func runCases(t *testing.T, check func(*History) []Violation, cases []checkCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := check(&c.h)
			if len(vs) != c.want {
				t.Errorf("%d violations, want %d: %v", len(vs), c.want, vs)
			}
		})
	}
}

func TestCheckExclusion(t *testing.T) {
	runCases(t, CheckExclusion, []checkCase{
		{"handoff", History{Holds: []*Hold{hold(1, PrimMutex, "k", 1, 0, 100, 900), hold(2, PrimMutex, "k", 2, 100, 200, 900)}}, 0},
		{"overlap", History{Holds: []*Hold{hold(1, PrimMutex, "k", 1, 0, 150, 900), hold(2, PrimMutex, "k", 2, 100, 200, 900)}}, 1},
		{"first past its deadline", History{Holds: []*Hold{hold(1, PrimMutex, "k", 1, 0, 500, 90), hold(2, PrimMutex, "k", 2, 100, 200, 900)}}, 0},
		{"first lost before", History{Holds: []*Hold{func() *Hold { h := hold(1, PrimMutex, "k", 1, 0, 500, 900); h.LostAt = at(90); return h }(), hold(2, PrimMutex, "k", 2, 100, 200, 900)}}, 0},
		{"other keys", History{Holds: []*Hold{hold(1, PrimMutex, "k", 1, 0, 150, 900), hold(2, PrimMutex, "j", 2, 100, 200, 900)}}, 0},
		{"readers share", History{Holds: []*Hold{hold(1, PrimRead, "rw", 1, 0, 150, 900), hold(2, PrimRead, "rw", 2, 100, 200, 900)}}, 0},
		{"writer with a reader", History{Holds: []*Hold{hold(1, PrimRead, "rw", 1, 0, 150, 900), hold(2, PrimWrite, "rw", 2, 100, 200, 900)}}, 1},
		{"writer with an RLock on a lingering claim", History{Holds: []*Hold{reread(1, "v", 1, 0, 100), reread(2, "v", 1, 150, 300), hold(3, PrimWrite, "rw", 2, 200, 250, 900)}}, 1},
		{"two leaders", History{Holds: []*Hold{hold(1, PrimElection, "e", 1, 0, 150, 90), hold(2, PrimElection, "e", 2, 100, 200, 900)}}, 1},
		{"leader after cancel", History{Holds: []*Hold{func() *Hold { h := hold(1, PrimElection, "e", 1, 0, 150, 90); h.LostAt = at(90); return h }(), hold(2, PrimElection, "e", 2, 100, 200, 900)}}, 0},
	})
}

func TestCheckLimit(t *testing.T) {
	sem := func(id int, start, end int, w, limit int64) *Hold {
		h := hold(id, PrimSem, "s", uint64(id), start, end, 900)
		h.Weight, h.Limit = w, limit
		return h
	}
	runCases(t, CheckLimit, []checkCase{
		{"fits", History{Holds: []*Hold{sem(1, 0, 100, 1, 2), sem(2, 50, 150, 1, 2), sem(3, 100, 200, 1, 2)}}, 0},
		{"over", History{Holds: []*Hold{sem(1, 0, 100, 1, 2), sem(2, 50, 150, 2, 2)}}, 1},
		{"two limits at once", History{Holds: []*Hold{sem(1, 0, 100, 1, 3), sem(2, 50, 150, 1, 2)}}, 1},
		{"two limits in turn", History{Holds: []*Hold{sem(1, 0, 100, 2, 3), sem(2, 100, 150, 2, 2)}}, 0},
	})
}

func TestCheckTokens(t *testing.T) {
	runCases(t, CheckTokens, []checkCase{
		{"increasing", History{Holds: []*Hold{hold(1, PrimMutex, "k", 1, 0, 100, 900), hold(2, PrimMutex, "k", 2, 100, 200, 900)}}, 0},
		{"back", History{Holds: []*Hold{hold(1, PrimMutex, "k", 5, 0, 100, 900), hold(2, PrimMutex, "k", 2, 100, 200, 900)}}, 1},
		{"reused", History{Holds: []*Hold{hold(1, PrimMutex, "k", 2, 0, 100, 900), hold(2, PrimMutex, "k", 2, 100, 200, 900)}}, 1},
		{"readers unordered", History{Holds: []*Hold{hold(1, PrimRead, "rw", 5, 0, 100, 900), hold(2, PrimRead, "rw", 2, 50, 200, 900)}}, 0},
		{"reader then writer", History{Holds: []*Hold{hold(1, PrimRead, "rw", 5, 0, 100, 900), hold(2, PrimWrite, "rw", 2, 100, 200, 900)}}, 1},
		{"one value's read holds in turn share one", History{Holds: []*Hold{reread(1, "v", 3, 0, 100), reread(2, "v", 3, 150, 200)}}, 0},
		{"one value's read holds at once share one", History{Holds: []*Hold{reread(1, "v", 3, 0, 100), reread(2, "v", 3, 50, 200)}}, 1},
		{"two values' read holds share one", History{Holds: []*Hold{reread(1, "v", 3, 0, 100), reread(2, "u", 3, 150, 200)}}, 1},
		{"read holds in turn of values without the linger share one", History{Holds: []*Hold{hold(1, PrimRead, "rw", 3, 0, 100, 900), hold(2, PrimRead, "rw", 3, 150, 200, 900)}}, 1},
		{"one never valid", History{Holds: []*Hold{hold(1, PrimMutex, "k", 5, 0, 100, 900), hold(2, PrimMutex, "k", 2, 100, 200, 50)}}, 0},
		{"across an emptying", History{Emptyings: []time.Time{at(50)}, Holds: []*Hold{hold(1, PrimMutex, "k", 5, 0, 10, 900), hold(2, PrimMutex, "k", 2, 2000, 2100, 2900)}}, 0},
	})
	runCases(t, CheckTokensAcrossEmptyings, []checkCase{
		{"back, handed out more than two seconds before", History{Emptyings: []time.Time{at(2050)}, Holds: []*Hold{hold(1, PrimMutex, "k", 5, 0, 10, 900), hold(2, PrimMutex, "k", 2, 3000, 3100, 3900)}}, 1},
		{"back, handed out 1.5 s before: within the promise", History{Emptyings: []time.Time{at(1510)}, Holds: []*Hold{hold(1, PrimMutex, "k", 5, 0, 10, 900), hold(2, PrimMutex, "k", 2, 2000, 2100, 2900)}}, 0},
		{"back, handed out within two seconds before", History{Emptyings: []time.Time{at(50)}, Holds: []*Hold{hold(1, PrimMutex, "k", 5, 0, 10, 900), hold(2, PrimMutex, "k", 2, 600, 700, 900)}}, 0},
		{"up", History{Emptyings: []time.Time{at(1050)}, Holds: []*Hold{hold(1, PrimMutex, "k", 5, 0, 10, 900), hold(2, PrimMutex, "k", 9, 2000, 2100, 2900)}}, 0},
		// Seen in the simulation: a token handed out 0.48 s before an
		// emptying came again 1.46 s later (the first claims of two
		// segments started in one second of store time).
		{"shared, handed out within two seconds before, the next long after", History{Emptyings: []time.Time{at(500)}, Holds: []*Hold{hold(1, PrimSem, "s", 7, 0, 100, 900), hold(2, PrimSem, "s", 7, 5000, 5100, 5900)}}, 0},
		{"shared, handed out more than two seconds before", History{Emptyings: []time.Time{at(2500)}, Holds: []*Hold{hold(1, PrimSem, "s", 7, 0, 100, 900), hold(2, PrimSem, "s", 7, 5000, 5100, 5900)}}, 1},
		{"semaphore back, handed out more than two seconds before", History{Emptyings: []time.Time{at(2500)}, Holds: []*Hold{hold(1, PrimSem, "s", 7, 0, 100, 900), hold(2, PrimSem, "s", 6, 5000, 5100, 5900)}}, 1},
		{"the later of two emptyings more than two seconds after", History{Emptyings: []time.Time{at(500), at(3000)}, Holds: []*Hold{hold(1, PrimSem, "s", 7, 0, 100, 900), hold(2, PrimSem, "s", 7, 5000, 5100, 5900)}}, 1},
	})
}

func TestCheckFIFO(t *testing.T) {
	waiter := func(id int, call, landed, start int, token uint64) *Hold {
		h := hold(id, PrimMutex, "k", token, start, start+10, start+900)
		h.Call, h.Landed = at(call), at(landed)
		return h
	}
	runCases(t, CheckFIFO, []checkCase{
		{"in order", History{Holds: []*Hold{waiter(1, 0, 5, 100, 1), waiter(2, 10, 15, 200, 2)}}, 0},
		{"overtaken", History{Holds: []*Hold{waiter(1, 0, 5, 200, 1), waiter(2, 10, 15, 100, 2)}}, 1},
		{"called together", History{Holds: []*Hold{waiter(1, 0, 20, 200, 1), waiter(2, 10, 15, 100, 2)}}, 0},
		{"emptied between", History{Emptyings: []time.Time{at(50)}, Holds: []*Hold{waiter(1, 0, 5, 200, 1), waiter(2, 10, 15, 100, 2)}}, 0},
		{"a reader overtaken by a writer", History{Holds: []*Hold{func() *Hold { h := waiter(1, 0, 5, 200, 1); h.Prim, h.Key = PrimRead, "rw"; return h }(), func() *Hold { h := waiter(2, 10, 15, 100, 2); h.Prim, h.Key = PrimWrite, "rw"; return h }()}}, 1},
		{"readers in either order", History{Holds: []*Hold{func() *Hold { h := waiter(1, 0, 5, 200, 1); h.Prim, h.Key = PrimRead, "rw"; return h }(), func() *Hold { h := waiter(2, 10, 15, 100, 2); h.Prim, h.Key = PrimRead, "rw"; return h }()}}, 0},
		{"overtaken after an emptying by the new queue's first hold, knowing the key from before", History{Emptyings: []time.Time{at(3)}, Holds: []*Hold{func() *Hold { h := waiter(1, 0, 5, 200, 1); h.KnownSince = at(1); return h }(), waiter(2, 10, 15, 100, 2)}}, 0},
		{"overtaken after an emptying, knowing the key only after it", History{Emptyings: []time.Time{at(3)}, Holds: []*Hold{func() *Hold { h := waiter(1, 0, 5, 200, 1); h.KnownSince = at(5); return h }(), waiter(2, 10, 15, 100, 2)}}, 1},
		{"overtaken after an emptying by a hold after the new queue's first", History{Emptyings: []time.Time{at(3)}, Holds: []*Hold{func() *Hold { h := waiter(1, 0, 5, 200, 1); h.KnownSince = at(1); return h }(), waiter(2, 10, 15, 100, 2), waiter(3, 12, 16, 150, 3)}}, 1},
		{"a try", History{Holds: []*Hold{waiter(1, 0, 5, 200, 1), func() *Hold { h := waiter(2, 10, 15, 100, 2); h.Try = true; return h }()}}, 0},
		// An RLock that takes its value's lingering claim (landed at 1)
		// again before its process heard of the writer queued behind it;
		// only a value with the linger on (Value) may.
		{"a writer overtaken by an RLock on a lingering claim", History{Holds: []*Hold{func() *Hold { h := waiter(1, 0, 5, 200, 2); h.Prim, h.Key = PrimWrite, "rw"; return h }(), func() *Hold { h := waiter(2, 10, 1, 100, 1); h.Prim, h.Key, h.Value = PrimRead, "rw", "v"; return h }()}}, 0},
		{"a writer overtaken by an RLock of a value without the linger", History{Holds: []*Hold{func() *Hold { h := waiter(1, 0, 5, 200, 2); h.Prim, h.Key = PrimWrite, "rw"; return h }(), func() *Hold { h := waiter(2, 10, 1, 100, 1); h.Prim, h.Key = PrimRead, "rw"; return h }()}}, 1},
	})
}

func TestCheckLost(t *testing.T) {
	h := func(end, deadline, lost int, slack time.Duration) *Hold {
		x := hold(1, PrimMutex, "k", 1, 0, end, deadline)
		if lost >= 0 {
			x.LostAt = at(lost)
		}
		x.LostSlack = slack
		return x
	}
	runCases(t, CheckLost, []checkCase{
		{"unlocked in time", History{Holds: []*Hold{h(100, 900, -1, 0)}}, 0},
		{"lost at the deadline", History{Holds: []*Hold{h(1000, 900, 900, 0)}}, 0},
		{"lost late", History{Holds: []*Hold{h(1000, 900, 950, 0)}}, 1},
		{"lost never", History{Holds: []*Hold{h(1000, 900, -1, 0)}}, 1},
		{"paused at the deadline", History{Holds: []*Hold{h(1000, 900, 950, 60*time.Millisecond)}}, 0},
	})
}

func TestCheckHeld(t *testing.T) {
	runCases(t, CheckHeld, []checkCase{
		{"held", History{Holds: []*Hold{hold(1, PrimMutex, "k", 1, 0, 100, 900)}}, 0},
		{"token 0", History{Holds: []*Hold{hold(1, PrimMutex, "k", 0, 0, 100, 900)}}, 1},
		{"no claim", History{Holds: []*Hold{func() *Hold { x := hold(1, PrimMutex, "k", 1, 0, 100, 900); x.Landed = time.Time{}; return x }()}}, 1},
		{"after the deadline", History{Holds: []*Hold{hold(1, PrimMutex, "k", 1, 100, 200, 50)}}, 1},
		{"after the deadline, paused", History{Holds: []*Hold{func() *Hold { x := hold(1, PrimMutex, "k", 1, 100, 200, 50); x.Paused = true; return x }()}}, 0},
	})
}

func TestCheckOnce(t *testing.T) {
	run := func(proc int, token uint64, start, end int, ok bool) *Run {
		return &Run{Proc: proc, Key: "o", Token: token, Start: at(start), End: at(end), OK: ok}
	}
	do := func(proc int, r *Run, ret int, err error, confirmed, deadline int) *Do {
		d := &Do{Proc: proc, Key: "o", Call: at(0), Return: at(ret), Err: err, Run: r, Deadline: at(deadline)}
		if confirmed >= 0 {
			d.Confirmed = []time.Time{at(confirmed)}
		}
		return d
	}
	r1, r2 := run(0, 1, 10, 100, true), run(1, 2, 300, 400, true)
	failed := run(0, 1, 10, 100, false)
	unconfirmed := errors.New("unconfirmed")
	runCases(t, CheckOnce, []checkCase{
		{"one run, the others wait", History{Runs: []*Run{r1}, Dos: []*Do{do(0, r1, 110, nil, 105, 900), do(1, nil, 120, nil, -1, 0)}}, 0},
		{"confirmed late", History{Runs: []*Run{r1}, Dos: []*Do{do(0, r1, 1000, nil, 950, 900)}}, 1},
		{"never confirmed", History{Runs: []*Run{r1}, Dos: []*Do{do(0, r1, 1000, nil, -1, 900)}}, 1},
		{"unconfirmed, then run again", History{Runs: []*Run{r1, r2}, Dos: []*Do{do(0, r1, 1000, unconfirmed, 950, 900), do(1, r2, 410, nil, 405, 900)}}, 0},
		{"run after a nil", History{Runs: []*Run{r1, r2}, Dos: []*Do{do(0, r1, 110, nil, 105, 900), do(1, r2, 410, unconfirmed, 405, 900)}}, 1},
		{"a run begun past its deadline", History{Runs: []*Run{r1, func() *Run { r := run(1, 0, 300, 400, true); r.Deadline = at(250); return r }()}, Dos: []*Do{do(0, r1, 110, nil, 105, 900)}}, 0},
		{"two nils", History{Runs: []*Run{r1, r2}, Dos: []*Do{do(0, r1, 110, nil, 105, 900), do(1, r2, 410, nil, 405, 900)}}, 2},
		{"nil without a run", History{Dos: []*Do{do(1, nil, 120, nil, -1, 0)}}, 1},
		{"nil after a failed run", History{Runs: []*Run{failed}, Dos: []*Do{do(0, failed, 110, nil, 105, 900)}}, 1},
		{"again after an emptying", History{Emptyings: []time.Time{at(200)}, Runs: []*Run{r1, r2}, Dos: []*Do{do(0, r1, 110, nil, 105, 900), do(1, r2, 410, nil, 405, 900)}}, 0},
	})
}
