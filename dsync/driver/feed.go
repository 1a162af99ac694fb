package driver

import (
	"context"
	"time"
)

// EventKind is the kind of a wake-up hint.
type EventKind int

const (
	// Waiting: a process waits, until store time Until, for the claim
	// of Key's Epoch to end. It announces again before then if it still
	// waits.
	Waiting EventKind = iota + 1
	// Ended: the claim of Key's Epoch ended.
	Ended
	// Held: the claim of Key's Epoch had not ended when its owner sent
	// this. Its owner sends another within the poll interval while it
	// has not ended. Until, if not zero, is the highest expiry of the
	// claim's session that the store had confirmed to its owner (store
	// time): the session's stored expiry is at least that. Only direct
	// hints (package dsync/hint) carry it, to the processes that
	// announced they wait for that claim: a store's feed is never asked
	// to publish it.
	Held
)

// Event is a wake-up hint between processes. Hints may be lost,
// duplicated, late or reordered: queues never depend on them, only
// latency does.
type Event struct {
	Kind  EventKind
	Key   string
	Epoch uint64
	Until time.Time
	// Own: for Waiting, the epoch of the waiter's own claim of Key, 0 if
	// not told (an older dsync). If the waiter gives that claim up, an
	// Ended for it follows: the wait ended with it.
	Own uint64
	// Need: for Waiting, how many ends, at least, of the claims the
	// waiter waits for (this one's among them) it must hear of before
	// it may hold: 1 if this claim's end may be all it lacks, more if it
	// only counts it (a Semaphore's waiter short of several units); 0 if
	// not told (an older dsync). The owner of the claim sends its end to
	// the others a little later than to those that may hold on it. Only
	// direct hints (package dsync/hint) carry it: a store's feed need not.
	// A hint like any other: a wrong Need costs latency, never a grant.
	Need uint64
	// Proc names the publishing process (its Client); a follower ignores
	// its own events.
	Proc string
}

// Feed is what a store that can carry wake-up hints between processes
// provides (Roles.Feed). Its events go to every follower.
type Feed interface {
	// Follow adds a follower, until stop is called, and reports to h from
	// one goroutine at a time. A Client follows once, and calls stop when
	// it is closed (before it closes the store).
	Follow(h FeedHandler) (stop func())
	// Publish sends an event to the other processes.
	Publish(ctx context.Context, e Event) error
	// Replay is how long after an event was published a follower whose
	// stream turns live still receives it: events published that long
	// before Live are delivered too.
	Replay() time.Duration
}

// A FeedPauser pauses the follower of a store's Feed (Roles.FeedPause). The
// follower stops reading the store for a while, when events reach the
// process another way (direct hints). While paused, following costs the
// store nothing and no event is delivered. Once resumed, the stream turns
// live again (Live) as if it had been down meanwhile.
type FeedPauser interface {
	Pause(paused bool)
}

// FeedHandler receives what a feed follows.
type FeedHandler interface {
	// Live: the stream is live from now on, the gen-th time: every event
	// published from now on will be delivered (and those published less
	// than Replay before). A Live may follow the last with no Down between
	// (a stream that failed and was reopened at once): events published
	// in between, longer than Replay before, may have been missed, as
	// across a Down.
	Live(gen uint64)
	// Down: the stream stopped; events may be missed until the next Live.
	// off: it will never be live (the store cannot carry events).
	Down(err error, off bool)
	// Event: an event another process published.
	Event(e Event)
}
