package waitgraph

import (
	"context"
	"fmt"

	"github.com/go-dsync/dsync/dsync/driver"
)

// MaxCycle is the most sets a cycle Find finds has.
const MaxCycle = 16

// A Reader reads what the check needs from a store. Each call may be a
// read of its own; none may write.
type Reader interface {
	// Holders returns the unended claims that hold c's key, or are about
	// to, ahead of c and conflicting with it: the claims c waits for. A
	// claim whose session is proven expired is not one.
	Holders(ctx context.Context, c driver.ClaimRef) ([]Holder, error)
	// LatestWait returns set's note of the highest number, as
	// driver.WaitStore's does.
	LatestWait(ctx context.Context, set string) (driver.Wait, bool, error)
	// Unended tells whether c has not ended: false once it has an end
	// marker or its session is proven expired. Claims only end: once
	// false, it is false for ever.
	Unended(ctx context.Context, c driver.ClaimRef) (bool, error)
}

// A Holder is a claim that holds a key, and the set it is a member of
// (its driver.Doc.Waiter; empty for none).
type Holder struct {
	Claim  driver.ClaimRef
	Waiter string
}

// An Edge is one wait of a cycle: the set of Note waits with the claim
// its Note names for Holder, a member of the next edge's set.
type Edge struct {
	Note   driver.Wait
	Holder Holder
}

// Waiting is the claim the edge's set waits with.
func (e Edge) Waiting() driver.ClaimRef {
	return driver.ClaimRef{Key: e.Note.Key, Epoch: e.Note.Epoch, Nonce: e.Note.Nonce}
}

// A Cycle is a cycle of waits through the set of its first edge: edge i
// goes from its Note.Set to edge i+1's, the last one back to the first's.
type Cycle []Edge

// Find looks for a cycle through set, from set's latest note, and returns
// a shortest one of at most MaxCycle sets (package doc). found is false
// if set has no note or no such cycle was read; err is the first read
// that failed, with nothing found.
func Find(ctx context.Context, r Reader, set string) (c Cycle, found bool, err error) {
	start, ok, err := r.LatestWait(ctx, set)
	if err != nil {
		return nil, false, fmt.Errorf("waitgraph: latest note of %s: %w", set, err)
	}
	if !ok {
		return nil, false, nil
	}
	f := &finder{r: r, start: start, notes: map[string]noteRead{}, reached: map[string]bool{set: true}}
	f.nodes = []node{{note: start, parent: -1}}
	// Level d holds the sets d edges from start. A set of level d closes
	// a cycle of d+1 sets, and one it reaches would close one of at
	// least d+2.
	for begin, d := 0, 0; begin < len(f.nodes) && d < MaxCycle; d++ {
		end := len(f.nodes)
		for i := begin; i < end; i++ {
			if c, found, err := f.expand(ctx, i, d+2 <= MaxCycle); err != nil || found {
				return c, found, err
			}
		}
		begin = end
	}
	return nil, false, nil
}

// node is a set reached: its latest note, the node it was reached from,
// and via, the claim of it that holds the key that node waits at.
type node struct {
	note   driver.Wait
	parent int
	via    Holder
}

type noteRead struct {
	note  driver.Wait
	found bool
}

type finder struct {
	r       Reader
	start   driver.Wait
	nodes   []node
	notes   map[string]noteRead // every note read, by set
	reached map[string]bool     // the sets of nodes
}

// expand follows the edges from node i: one back to start closes a
// cycle; with grow, one to a set not reached yet adds its node.
func (f *finder) expand(ctx context.Context, i int, grow bool) (Cycle, bool, error) {
	n := f.nodes[i].note
	hs, err := f.r.Holders(ctx, driver.ClaimRef{Key: n.Key, Epoch: n.Epoch, Nonce: n.Nonce})
	if err != nil {
		return nil, false, fmt.Errorf("waitgraph: holders of %s@%d: %w", n.Key, n.Epoch, err)
	}
	for _, h := range hs {
		switch {
		case h.Waiter == "":
			// A single lock's claim: no set waits behind it.
		case h.Waiter == f.start.Set:
			if names(f.start, h.Claim) {
				return f.cycle(i, h), true, nil
			}
		case grow && !f.reached[h.Waiter]:
			z, err := f.note(ctx, h.Waiter)
			if err != nil {
				return nil, false, err
			}
			if z.found && names(z.note, h.Claim) {
				f.reached[h.Waiter] = true
				f.nodes = append(f.nodes, node{note: z.note, parent: i, via: h})
			}
		}
	}
	return nil, false, nil
}

// note reads set's latest note, once per check.
func (f *finder) note(ctx context.Context, set string) (noteRead, error) {
	if z, ok := f.notes[set]; ok {
		return z, nil
	}
	w, found, err := f.r.LatestWait(ctx, set)
	if err != nil {
		return noteRead{}, fmt.Errorf("waitgraph: latest note of %s: %w", set, err)
	}
	z := noteRead{w, found}
	f.notes[set] = z
	return z, nil
}

// cycle is the cycle from start to node i, closed by h.
func (f *finder) cycle(i int, h Holder) Cycle {
	var c Cycle
	for j, via := i, h; j >= 0; j = f.nodes[j].parent {
		c = append(c, Edge{Note: f.nodes[j].note, Holder: via})
		via = f.nodes[j].via
	}
	for a, b := 0, len(c)-1; a < b; a, b = a+1, b-1 {
		c[a], c[b] = c[b], c[a]
	}
	return c
}

// names tells whether w holds c while it waits.
func names(w driver.Wait, c driver.ClaimRef) bool {
	for _, h := range w.Holds {
		if h == c {
			return true
		}
	}
	return false
}
