package dsyncmongo

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The parts of the driver contract that a type of the store's own serves,
// with the state it owns: the Store passes each call on.

var (
	_ driver.Feed       = (*Store)(nil)
	_ driver.FeedPauser = (*Store)(nil)
)

// Follow implements driver.Feed: it starts the follower of the wake-up
// stream, one per store (its Client's), until the returned stop or Close
// (feed.go).
func (s *Store) Follow(h driver.FeedHandler) (stop func()) { return s.feed.Follow(h) }

// Publish implements driver.Feed: one insert into the events collection
// (events.go).
func (s *Store) Publish(ctx context.Context, e driver.Event) error { return s.feed.Publish(ctx, e) }

// Replay implements driver.Feed: a stream that turns live replays the
// events kept, and on FerretDB events are trimmed Replay after a
// follower read them (trim.go).
func (s *Store) Replay() time.Duration { return s.feed.Replay() }

// Pause implements driver.FeedPauser: while paused, the follower closes
// its cursor and sends the server nothing (feed_pause.go).
func (s *Store) Pause(paused bool) { s.feed.Pause(paused) }
