package leader

import (
	"context"
	"fmt"

	"github.com/go-dsync/dsync/internal/clienthook"
)

// Proclaim changes the value this candidate advertises while it leads
// (Info.Value).
//
// It needs no new election. Leader and Observe show the value from when
// it is confirmed. Observers never see the values of a term go back
// (Info.Rev orders them). The value lasts until the term ends. The next
// term starts again from WithValue's.
//
// Proclaim returns ErrNotLeader when this candidate does not lead, or
// when its term ended before the value was confirmed. It returns
// ErrNoMembers without a member store (WithMembers), which keeps the
// value. It returns the store's error when the value could not be
// confirmed (the next heartbeat sends it again). In both cases the value
// may still be shown, for the term it was proclaimed in only.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	e.mustBeMade()
	if len(value) > MaxValueSize {
		return fmt.Errorf("leader: value of %d bytes, more than %d", len(value), MaxValueSize)
	}
	if e.cfg.members == nil {
		return ErrNoMembers
	}
	e.putMu.Lock()
	defer e.putMu.Unlock()
	e.state.Lock()
	t := e.term
	if t == nil || t.ctx.Err() != nil {
		e.state.Unlock()
		return ErrNotLeader
	}
	e.proclaimed, e.rev = value, e.rev+1
	e.state.Unlock()
	pctx, cancel := context.WithTimeout(ctx, clienthook.ClientParams(e.client).TTL)
	defer cancel()
	if err := e.cfg.members.PutMember(pctx, e.name, e.member()); err != nil {
		return fmt.Errorf("leader: proclaim %q: %w", e.name, err)
	}
	if t.ctx.Err() != nil {
		return ErrNotLeader
	}
	return nil
}

// termRef is what a leadership context carries: whose term it is.
type termRef struct {
	e     *Election
	token uint64
}

type termKey struct{}

// TermOf returns this process's view of the term behind ctx.
//
// ctx is a context Campaign returned or Run passed to its function, or one
// derived from it (errgroup.WithContext, say). Info carries the term's
// token, and the value advertised now if the term is still this candidate's
// last (its WithValue value, or the last one proclaimed). ok is false for
// any other context. It answers after the term ended too: check ctx.Err().
func TermOf(ctx context.Context) (info Info, ok bool) {
	ref, ok := ctx.Value(termKey{}).(*termRef)
	if !ok {
		return Info{}, false
	}
	e := ref.e
	e.state.Lock()
	defer e.state.Unlock()
	info = e.selfInfoLocked()
	if info.Token != ref.token {
		// A later term began since: this one's last value is not kept.
		info.Token, info.Value, info.Rev = ref.token, "", 0
	}
	return info, true
}

// Progress reports that the work of the term behind ctx moves on.
//
// ctx is a context Campaign returned or Run passed to its function, or a
// Partition shard's, or one derived from them. The report counts for the
// term's progress deadline (WithProgressDeadline). It sends nothing to the store: a single
// clock reading is kept. It does nothing for any other context. It does
// nothing once ctx ended either: a later term of the same candidate is
// not kept alive by an earlier term's work.
func Progress(ctx context.Context) {
	ref, ok := ctx.Value(termKey{}).(*termRef)
	if !ok || ctx.Err() != nil {
		return
	}
	e := ref.e
	e.state.Lock()
	current := e.term != nil && e.term.token == ref.token
	e.state.Unlock()
	if current { // not a context of an earlier term, detached from it
		e.mu.Progress()
	}
}
