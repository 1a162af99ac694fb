package leader

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-dsync/dsync/internal/clienthook"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader/internal/lease"
)

// Who leads is decided here, once, for every store: the holder of the
// election's lease is the claim at the head of its key's queue (its
// first claim that holds), which the Client reads; its member status, if
// a MemberStore keeps one, adds what it advertises (Version, Value).

// readLeader returns who leads e's election now (leaderOf).
func (e *Election) readLeader(ctx context.Context) (Info, error) {
	return leaderOf(ctx, e.client, e.cfg.members, e.name)
}

// leaderOf returns who leads election now, read through c, with what its
// member status in members advertises (nil: none), or an error wrapping
// ErrNoLeader. When the leader's member status is of a later term than
// the claim read (the term read has ended since), it reads who leads
// again, twice at most, rather than pair the ended term with what a
// later one advertises.
func leaderOf(ctx context.Context, c *dsync.Client, members MemberStore, election string) (Info, error) {
	for stale := 0; ; stale++ {
		l, err := lease.Holder(ctx, c, election)
		if err != nil {
			return Info{}, err
		}
		info := Info{ID: l.Owner, Host: l.Host, PID: l.PID, Since: l.QueuedAt, Token: l.Token}
		if members == nil {
			return info, nil
		}
		m, found, err := members.Member(ctx, election, l.Owner)
		if err != nil {
			return Info{}, fmt.Errorf("leader: read member status: %w", err)
		}
		if !found {
			return info, nil
		}
		info.Version = m.Version
		var current bool
		info.Value, info.Rev, current = memberValue(info.Token, m)
		if current || stale >= 2 {
			return info, nil
		}
	}
}

// Watching who leads: Observe and the poll behind it (OnNewLeader too),
// which read it as readLeader does.

// Observe returns a channel that receives the leader each time a new one
// is seen.
//
// Leaders come in order of terms (tokens strictly increase). The channel
// receives a leader again each time it is seen to advertise a newer value
// (Proclaim: within a term, Info.Rev strictly increases). Leaders whose
// whole term fell between two polls are not seen, nor values that were
// replaced between two polls. The channel is closed when ctx ends, which
// is how the goroutine behind it stops. Observe does not need this
// Election to campaign.
func (e *Election) Observe(ctx context.Context) <-chan Info {
	e.mustBeMade()
	ch := make(chan Info)
	go func() {
		defer close(ch)
		e.pollLeaders(ctx.Done(), true, func(info Info) bool {
			select {
			case ch <- info:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return ch
}

// pollLeaders asks who leads every poll interval until done closes, and
// calls emit for each leader with a higher token than the last one; with
// values set, also for a higher Rev of the same token.
func (e *Election) pollLeaders(done <-chan struct{}, values bool, emit func(Info) bool) {
	var last Info
	for {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.pollInterval+clienthook.ClientParams(e.client).TTL)
		info, err := e.readLeader(ctx)
		cancel()
		switch {
		case newer(&info, &err, last, values):
			if !emit(info) {
				return
			}
			last = info
		case err != nil && !errors.Is(err, ErrNoLeader):
			e.cfg.logger.Warn("leader: observe", "election", e.name, "err", err)
		}
		select {
		case <-done:
			return
		case <-time.After(e.cfg.pollInterval):
		}
	}
}
