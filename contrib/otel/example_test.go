package dsyncotel_test

import (
	"context"
	"fmt"
	"log"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/go-dsync/dsync/contrib/otel"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// A Client's events recorded through a meter; here the meter's reader is
// read by hand, where a program would export it (Prometheus, OTLP).
func ExampleObserver() {
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("dsync")
	obs, err := dsyncotel.Observer(meter)
	if err != nil {
		log.Fatal(err)
	}
	client, err := dsync.NewClient(memory.New(), dsync.ClientWithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	a, _ := dsync.NewMutex(client, "nightly-billing")
	b, _ := dsync.NewMutex(client, "nightly-billing")
	a.Lock()
	fmt.Println("b's try:", b.TryLock())
	a.Unlock()
	client.Close() // records the events still queued

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "dsync.acquire.duration" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				outcome, _ := dp.Attributes.Value(attribute.Key("dsync.outcome"))
				if dp.Count > 0 {
					fmt.Println(m.Name, outcome.AsString(), dp.Count)
				}
			}
		}
	}
	// Unordered output:
	// b's try: false
	// dsync.acquire.duration acquired 1
	// dsync.acquire.duration held 1
}
