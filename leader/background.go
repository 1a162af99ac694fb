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

// statusAfterTerm is how long after a term ends its candidate writes its
// status (no longer leading). Written at once, that write reached the
// store while the next leader's walk read it (in a trace on the embedded
// FerretDB, the next leader's two reads took 1.1 and 2.2 ms while it was
// in flight), and slowed the takeover that Resign is for. A status says
// how the candidate was when it last reported anyway, and is refreshed
// every heartbeat interval.
const statusAfterTerm = 50 * time.Millisecond

// heartbeatSoon asks for a heartbeat statusAfterTerm from now.
func (e *Election) heartbeatSoon() {
	select {
	case e.kickSoon <- struct{}{}:
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
		case <-e.kickSoon:
			if !e.sleepUnlessKicked(statusAfterTerm) {
				return
			}
		case <-e.steering.dueC():
			// A better candidate's preemption delay has ended: preempt
			// now, without the rest of a heartbeat.
			e.steering.preemptDue()
			continue
		case <-time.After(e.cfg.heartbeatInterval):
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.heartbeatInterval)
		e.putMember(ctx)
		if e.cfg.steer.on() {
			e.steering.steerStep(ctx)
		} else {
			e.xfer.stepAsideIfAsked(ctx)
		}
		e.xfer.actOnTransferRequest(ctx)
		cancel()
	}
}

// putMember writes this candidate's status (writeMember), and logs a
// failure as the heartbeat's.
func (e *Election) putMember(ctx context.Context) {
	if err := e.writeMember(ctx); err != nil {
		e.cfg.logger.Warn("leader: heartbeat", "election", e.name, "err", err)
	}
}

// writeMember writes this candidate's status to its member store, if it
// has one; one write at a time.
func (e *Election) writeMember(ctx context.Context) error {
	e.putMu.Lock()
	defer e.putMu.Unlock()
	if e.cfg.members == nil {
		return nil
	}
	return e.cfg.members.PutMember(ctx, e.name, e.member())
}

// member is this candidate's status now.
func (e *Election) member() Member {
	e.state.Lock()
	defer e.state.Unlock()
	m := e.self
	m.Leader = e.term != nil && e.term.ctx.Err() == nil
	m.Term, m.Proclaimed, m.Rev = e.procTerm, e.proclaimed, e.rev
	m.Handover = e.xfer.handoverLocked()
	return m
}

// sleepUnlessKicked waits d, or less if a heartbeat is asked for now; it
// reports false if the Election stops meanwhile.
func (e *Election) sleepUnlessKicked(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.stop:
		return false
	case <-e.kick:
	case <-t.C:
	}
	return true
}
