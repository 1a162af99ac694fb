package leader

import (
	"context"
	"errors"
	"time"
)

// Watching who leads: Observe and the poll behind it (OnNewLeader too).

// Observe returns a channel that receives the leader each time a new one
// is seen, in order of terms (tokens strictly increase), and again each
// time it is seen to advertise a newer value (Proclaim: within a term,
// Info.Rev strictly increases). Leaders whose whole term fell between two
// polls are not seen, nor values that were replaced between two polls.
// The channel is closed when ctx ends, which is how the goroutine behind
// it stops; Observe does not need this Election to campaign.
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
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.pollInterval+e.client.TTL())
		info, err := e.readLeader(ctx)
		cancel()
		newer := err == nil && (info.Token > last.Token || values && info.Token == last.Token && info.Rev > last.Rev)
		if p, ok := plantedNewer(&info, &err, last); ok {
			newer = p
		}
		switch {
		case newer:
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
