package dsyncgocron

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-co-op/gocron/v2"

	"github.com/go-dsync/dsync/leader"
)

// An Elector is a gocron.Elector on a leader.Election: it campaigns from
// NewElector until Close, and IsLeader lets jobs run only while it leads.
type Elector struct {
	e      *leader.Election
	cancel context.CancelFunc
	done   chan struct{}
	err    error // what the campaign ended with; read after done
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector starts campaigning in e, in a goroutine of its own, and
// again after each lost term, until Close. The Elector does not own e:
// close e after the Elector.
//
// When the leader's process dies, no scheduler runs the jobs until
// another takes over, up to the TTL of e's Client later
// (dsync.DefaultTTL, 15 s, unless dsync.ClientWithTTL): the ticks meanwhile
// are missed. A job every
// second wants a TTL of a few seconds; a shorter TTL costs more
// renewals.
func NewElector(e *leader.Election) (*Elector, error) {
	if e == nil {
		return nil, errors.New("dsyncgocron: nil election")
	}
	ctx, cancel := context.WithCancel(context.Background())
	el := &Elector{e: e, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(el.done)
		el.err = e.Run(ctx, func(lctx context.Context) error {
			<-lctx.Done()
			return nil
		})
	}()
	return el, nil
}

// IsLeader implements gocron.Elector: nil while this candidate leads (its
// leadership context is live: it is cancelled at the lease's local
// deadline, renewals or not), otherwise an error wrapping
// leader.ErrNotLeader. It does no I/O.
func (el *Elector) IsLeader(context.Context) error {
	if el.e.IsLeader() {
		return nil
	}
	return fmt.Errorf("dsyncgocron: election %q: %w", el.e.Name(), leader.ErrNotLeader)
}

// Close stops campaigning, resigns if this candidate leads, and waits for
// that. It may be called more than once.
func (el *Elector) Close() error {
	el.cancel()
	<-el.done
	if el.err != nil && !errors.Is(el.err, context.Canceled) {
		return el.err
	}
	return nil
}
