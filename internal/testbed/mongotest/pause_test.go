//go:build unix

package mongotest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// A paused Process answers no client, connected or new, until Resume; it
// then answers with its data, and a write sent during the pause lands
// after the Resume, not before. The pause is short beside the driver's
// heartbeat (10 s), so no heartbeat gives up on the server meanwhile.
func TestProcessPauseResume(t *testing.T) {
	p := mongotest.StartProcess(t)
	pid := p.Pid()
	started := make(chan struct{}, 16) // inserts seen by the server's client
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "insert" {
			started <- struct{}{}
		}
	}}
	c := mongotest.NewClient(t, p.URI(), options.Client().SetMonitor(mon))
	coll := c.Database("outage").Collection("c")
	if _, err := coll.InsertOne(ctx(t), bson.D{{Key: "_id", Value: "before"}, {Key: "v", Value: 1}}); err != nil {
		t.Fatalf("insert before the pause: %v", err)
	}
	<-started

	p.Pause()
	if !p.Paused() || !p.Running() || p.Pid() != pid {
		t.Fatalf("after Pause: paused %v, running %v, pid %d (was %d)", p.Paused(), p.Running(), p.Pid(), pid)
	}
	// A write sent during the pause, over the connection the insert above
	// left idle: it is on its way once the driver says it started.
	landed := make(chan time.Time, 1)
	writeErr := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: "during"}, {Key: "v", Value: 2}})
		landed <- time.Now()
		writeErr <- err
	}()
	<-started

	// No answer, to the client that was connected or to a new one: both
	// wait until their bound, and no error comes back before it.
	short := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		t.Cleanup(cancel)
		return c
	}
	if err := coll.FindOne(short(), bson.D{{Key: "_id", Value: "before"}}).Err(); !isTimeout(err) {
		t.Fatalf("find during the pause: %v, want a timeout", err)
	}
	fresh := mongotest.NewClient(t, p.URI(), options.Client().SetServerSelectionTimeout(time.Second))
	if err := fresh.Ping(short(), nil); !isTimeout(err) {
		t.Fatalf("a new client's ping during the pause: %v, want a timeout", err)
	}
	select {
	case <-landed:
		t.Fatalf("the write sent during the pause returned before Resume: %v", <-writeErr)
	default:
	}

	resumed := time.Now()
	p.Resume()
	if p.Paused() || p.Pid() != pid {
		t.Fatalf("after Resume: paused %v, pid %d (was %d)", p.Paused(), p.Pid(), pid)
	}
	if at, err := <-landed, <-writeErr; err != nil || at.Before(resumed) {
		t.Fatalf("the write sent during the pause: %v, returned %v after Resume", err, at.Sub(resumed))
	}
	n, err := coll.CountDocuments(ctx(t), bson.D{})
	if err != nil || n != 2 {
		t.Fatalf("after Resume: %d documents (%v), want the one written before the pause and the one during it", n, err)
	}
	if err := fresh.Ping(ctx(t), nil); err != nil {
		t.Fatalf("the new client after Resume: %v", err)
	}
}

// A paused Process stops (and restarts) as a running one does: Stop
// resumes it to let it act on its SIGTERM, where a process left stopped
// would wait out Stop's 15 s bound and be killed.
func TestProcessStopWhilePaused(t *testing.T) {
	p := mongotest.StartProcess(t)
	c := mongotest.NewClient(t, p.URI())
	coll := c.Database("outage").Collection("c")
	if _, err := coll.InsertOne(ctx(t), bson.D{{Key: "_id", Value: "k"}}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	p.Pause()
	begin := time.Now()
	p.Stop()
	if took := time.Since(begin); took >= stopKillBound {
		t.Errorf("Stop of a paused process took %v: it was killed at Stop's bound, not stopped", took.Round(time.Millisecond))
	}
	if p.Running() || p.Paused() {
		t.Fatalf("after Stop: running %v, paused %v", p.Running(), p.Paused())
	}
	p.Restart()
	if n, err := coll.CountDocuments(ctx(t), bson.D{}); err != nil || n != 1 {
		t.Fatalf("after Stop while paused and Restart: %d documents, %v", n, err)
	}
}

// stopKillBound is how long Process.Stop waits for the server to exit
// before it kills it.
const stopKillBound = 15 * time.Second

// isTimeout reports whether err is a request given up at its bound, as
// against an answer or a refusal.
func isTimeout(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || mongo.IsTimeout(err))
}
