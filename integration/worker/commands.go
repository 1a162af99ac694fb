package worker

import (
	"context"
	"log/slog"
	"sync"

	"go.mongodb.org/mongo-driver/v2/event"
)

// commandLog logs every command the worker's Client sends when it ends
// (name, collection, how long, its error), at debug level: what a
// store's return after an outage had to serve, and what was given up.
// Started events carry the collection; the ends only the request's ID.
func commandLog(logger *slog.Logger) *event.CommandMonitor {
	var mu sync.Mutex
	colls := make(map[int64]string)
	end := func(e event.CommandFinishedEvent, err string) {
		mu.Lock()
		coll := colls[e.RequestID]
		delete(colls, e.RequestID)
		mu.Unlock()
		logger.Debug("command", "name", e.CommandName, "coll", coll, "took", e.Duration, "err", err)
	}
	return &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			coll, _ := e.Command.Index(0).Value().StringValueOK()
			mu.Lock()
			colls[e.RequestID] = coll
			mu.Unlock()
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) { end(e.CommandFinishedEvent, "") },
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			end(e.CommandFinishedEvent, e.Failure.Error())
		},
	}
}
