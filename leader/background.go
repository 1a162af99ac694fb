package leader

import (
	"context"
	"time"
)

// An Election's background: the heartbeat that keeps its member status
// fresh, and the watch that tells OnNewLeader of new leaders.

// startBackground starts the heartbeat, and the new-leader watch if
// OnNewLeader is set, once. e.state is held.
func (e *Election) startBackground() {
	if e.background {
		return
	}
	e.background = true
	if e.cfg.members != nil {
		e.wg.Add(1)
		go e.heartbeat()
	}
	if e.cfg.onNewLeader != nil {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.pollLeaders(e.stop, false, func(info Info) bool {
				e.cfg.onNewLeader(info)
				return true
			})
		}()
	}
}

func (e *Election) heartbeatNow() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *Election) heartbeat() {
	defer e.wg.Done()
	for {
		select {
		case <-e.stop:
			return
		case <-e.kick:
		case <-time.After(e.cfg.heartbeatInterval):
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.heartbeatInterval)
		e.putMember(ctx)
		cancel()
	}
}

func (e *Election) putMember(ctx context.Context) {
	e.putMu.Lock()
	defer e.putMu.Unlock()
	if e.cfg.members == nil {
		return
	}
	if err := e.cfg.members.PutMember(ctx, e.name, e.member()); err != nil {
		e.cfg.logger.Warn("leader: heartbeat", "election", e.name, "err", err)
	}
}

// member is this candidate's status now.
func (e *Election) member() Member {
	e.state.Lock()
	defer e.state.Unlock()
	m := e.self
	m.Leader = e.term != nil && e.term.ctx.Err() == nil
	m.Term, m.Proclaimed, m.Rev = e.procTerm, e.proclaimed, e.rev
	return m
}
