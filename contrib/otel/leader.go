package dsyncotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/go-dsync/dsync/leader"
)

// LeaderObserver returns a function for leader.WithObserver that keeps
// client-go's leader gauge, leader_election_master_status{name}, and
// counts transitions (see the package doc).
func LeaderObserver(meter metric.Meter) (func(leader.Transition), error) {
	if meter == nil {
		return nil, errors.New("dsyncotel: nil meter")
	}
	status, err := meter.Int64Gauge("leader_election_master_status",
		metric.WithDescription("1 while this process leads the election name, 0 otherwise."))
	if err != nil {
		return nil, err
	}
	transitions, err := meter.Int64Counter("dsync.leader.transitions", metric.WithUnit("{transition}"),
		metric.WithDescription("Times this process started (dsync.leading true) or stopped leading."))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	return func(t leader.Transition) {
		name := attribute.String("name", t.Election)
		v := int64(0)
		if t.Leading {
			v = 1
		}
		status.Record(ctx, v, metric.WithAttributes(name))
		transitions.Add(ctx, 1, metric.WithAttributes(name, attribute.Bool("dsync.leading", t.Leading)))
	}, nil
}
