package chain

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Histories. An emptied store begins a new history: its protocol document
// (ProtocolID) goes with everything else, and the insert that writes it
// again carries a nonce of its own, so the document's nonce names the
// history it began (the document is never updated, and an insert lands
// once at most: a nonce names one history). Every gate records the
// history its sender knew (Doc.Nonce): the nonce it read in the protocol
// document before it sent the gate, so the gate was sent after that
// history began.
//
// A process relies on a gate it did not insert only if the protocol
// document, read after the gate, names the gate's history; a start, or a
// refresh, relies on its own gates only if the document read after they
// landed names theirs (and this process's span: a refresh of a process
// that kept a segment across an emptying, in a store that records
// another span since, inserts gates that no start of the store's span
// meets). So every gate relied on was sent after the history it is
// relied on in began: a start, or a refresh, held back across an emptying
// never makes its segment look covered in the next history (its tokens,
// from the store's clock before the emptying, would lie below those
// handed out between its sending and the emptying). Such a stray gate
// still owns its bucket: the key waits until no start can meet it any
// more (at most three bucket spans after it was sent), and then starts
// a segment whose base, from the store's clock, lies above every token
// handed out more than the margin before (see the package documentation).

// errOtherHistory: a gate names a history of the store other than the
// one its protocol document names now.
var errOtherHistory = errors.New("chain: the gate was sent in another history of the store")

// learnHistory records that the store's protocol document names history.
func (e *Engine) learnHistory(history string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.history = history
}

// knownHistory is the history of the store this process knows last: the
// nonce of the protocol document it read or inserted last.
func (e *Engine) knownHistory() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.history
}

// sameHistory reports whether gate g was sent in history, the one the
// store's protocol document names now.
func (e *Engine) sameHistory(g Doc, history string) bool {
	return g.Nonce == history || e.has(BugHistoryIgnored)
}

// knownHistoryOf reports whether gate g records the history of the store
// this process knows last: a gate read without a read of the protocol
// document after it (freshFloor, gateFloor) counts only then.
func (e *Engine) knownHistoryOf(g Doc) bool {
	return e.sameHistory(g, e.knownHistory())
}

// gateOfThisHistory reads the store's protocol document (after g was read
// or landed) and reports errOtherHistory if it names another history than
// g's: the gate must not be relied on.
func (e *Engine) gateOfThisHistory(ctx context.Context, g Doc) error {
	history, err := e.confirmSpan(ctx)
	if err != nil {
		return err
	}
	if !e.sameHistory(g, history) {
		return fmt.Errorf("%w: %q bucket %d", errOtherHistory, g.Key, g.Bucket)
	}
	return nil
}

// noteStray records that key's buckets up to the gate of bucket b belong
// to a segment of another history: a start meets them until the store's
// time is past the coverage that gate would give, and the next claims of
// key report it busy until then without a request.
func (e *Engine) noteStray(key string, b int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.state(key)
	ks.strayUntil = e.bucketEnd(b + 1).Add(-e.cfg.Margin)
}

// strayUntil returns when the stray segment key's starts meet stops
// giving coverage (zero if none is known).
func (e *Engine) strayUntil(key string) time.Time {
	return e.snapshot(key).strayUntil
}
