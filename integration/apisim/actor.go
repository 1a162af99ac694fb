package apisim

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// An Actor is code built on the public API that the simulation runs
// beside the primitives, under the same faults: its operations are one
// more kind of operation of the processes' workers, each made on the
// Client of the process incarnation that runs it. It is how a module that
// this package cannot import (contrib/gocron's Locker, a module of its
// own that requires this one) is simulated: that module's test passes
// its Actor in Options.Actors, and its checker in Actor.Check.
type Actor struct {
	// Name names the actor's operations in the figures (Figures.Ops:
	// "NAME OUTCOME") and in the history (Action.Actor).
	Name string
	// Share is the chance, from 0 to 1, that a worker's next operation is
	// this actor's rather than a primitive's.
	Share float64
	// Start is called at each incarnation of each process, before its
	// workers start, and returns the operation its workers call: with a
	// context that ends when the incarnation stops or the operator wants
	// the operations under way to end (so that he can empty the
	// collections), and the worker's name. The operation records what it
	// did with env.Record.
	Start func(env *Env) (op func(ctx context.Context, who string))
	// Check judges the history at the end of a seed (its Actions, and
	// anything else it holds); its violations count as the simulation's.
	// Nil: the actor's operations are only counted.
	Check func(h *History) []Violation
}

// Action is one operation of an Actor, as it recorded it.
type Action struct {
	Actor string // the Actor's Name
	Proc  int    // the simulated process
	Who   string // the worker that ran it
	// Key is what the operation was on, in the actor's terms (for the
	// gocron Locker: the slot's Once key).
	Key          string
	Call, Return time.Time
	// Outcome is the operation's outcome, in the actor's terms.
	Outcome string
	// Era is how many times the operator had emptied the collections
	// when the operation was recorded: an emptying takes every record
	// away (docs/operations.md), so promises about records hold within
	// an era. The operator waits for the operations under way before he
	// empties, so an operation runs within one era; its times cannot say
	// which, when its end and an emptying fall on one instant of fake
	// time (as they do when the emptying's cancellation ends it).
	Era int
}

func (a *Action) String() string {
	return fmt.Sprintf("p%d %s %s %s %s [%v, %v] era %d", a.Proc, a.Who, a.Actor, a.Key, a.Outcome, a.Call.Format(tf), a.Return.Format(tf), a.Era)
}

// Env is what an Actor's operations get of the process incarnation that
// runs them.
type Env struct {
	// Proc is the simulated process.
	Proc int
	// Client is the incarnation's Client, over the process's faulty view
	// of the store, with its clock (Now): closed when the incarnation
	// stops.
	Client *dsync.Client

	inc   *incarnation
	actor string
}

// Now is the process's clock: the fake time stepped forward by the
// process's clock steps.
func (e *Env) Now() time.Time { return clock{e.inc.p}.Now() }

// TTL is the process's configured lease TTL.
func (e *Env) TTL() time.Duration { return e.inc.p.cfg.TTL }

// Rand returns a duration in [lo, hi) drawn from the seed.
func (e *Env) Rand(lo, hi time.Duration) time.Duration { return e.inc.p.w.rand(lo, hi) }

// Chance reports true with probability p, drawn from the seed.
func (e *Env) Chance(p float64) bool { return e.inc.p.w.chance(p) }

// Sleep sleeps d in fake time, or until ctx ends.
func (e *Env) Sleep(ctx context.Context, d time.Duration) { sleepCtx(ctx, d) }

// WaitRunning returns once the process is not paused (a paused process
// runs no code), or ctx's cause if ctx ends first.
func (e *Env) WaitRunning(ctx context.Context) error { return e.inc.p.waitRunning(ctx) }

// Record adds a to the history, as an operation of this actor and
// process, and counts its outcome in the figures.
func (e *Env) Record(a *Action) {
	a.Actor, a.Proc = e.actor, e.inc.p.id
	w := e.inc.p.w
	w.mu.Lock()
	a.Era = len(w.hist.Emptyings)
	w.hist.Actions = append(w.hist.Actions, a)
	w.fig.Ops[e.actor+" "+a.Outcome]++
	w.mu.Unlock()
}

// startActors starts the world's actors for a new incarnation.
func (inc *incarnation) startActors() {
	for _, a := range inc.p.w.actors {
		inc.actorOps = append(inc.actorOps, a.Start(&Env{Proc: inc.p.id, Client: inc.ps.client, inc: inc, actor: a.Name}))
	}
}

// actorOp draws whether a worker's next operation is an actor's, and
// returns it (nil: a primitive's). Without actors it draws nothing, so
// that a run without them is the run it was before actors existed.
func (inc *incarnation) actorOp() func(ctx context.Context, who string) {
	for i, a := range inc.p.w.actors {
		if inc.p.w.chance(a.Share) {
			return inc.actorOps[i]
		}
	}
	return nil
}

// checkActors runs the actors' checkers.
func checkActors(w *world) []Violation {
	var vs []Violation
	for _, a := range w.actors {
		if a.Check != nil {
			vs = append(vs, a.Check(&w.hist)...)
		}
	}
	return vs
}
