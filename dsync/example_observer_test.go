package dsync_test

import (
	"fmt"
	"github.com/go-dsync/dsync/dsync/event"
	"net/http"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// Metrics and a health check: an Observer is told of waits, holds,
// losses and renewals (feed them to your metrics library; module
// github.com/go-dsync/dsync/contrib/otel does it for OpenTelemetry), and
// HealthHandler answers 503 while the process's lease renewals lag.
func ExampleClientWithObserver() {
	c, err := dsync.NewClient(memory.New(), dsync.ClientWithObserver(event.Observer{
		Acquired: func(a event.Acquisition) { fmt.Println("acquired", a.Key, "after waiting", a.Wait.Round(time.Second)) },
		Released: func(h event.Held) { fmt.Println("released", h.Key) },
		Lost:     func(h event.Held, err error) { fmt.Println("lost", h.Key) },
	}))
	if err != nil {
		panic(err)
	}
	http.Handle("/healthz", statuspage.HealthHandler(c, 5*time.Second))

	m, err := dsync.NewMutex(c, "nightly-report")
	if err != nil {
		panic(err)
	}
	m.Lock()
	//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
	m.Unlock()
	c.Close() // delivers the events still queued
	// Output:
	// acquired nightly-report after waiting 0s
	// released nightly-report
}
