package dsyncotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/event"
)

// An Option configures Observer. A nil Option is an error Observer
// returns.
type Option func(*config) error

type config struct{ keys bool }

// WithKeys adds each event's key as the attribute dsync.key. Use it only
// when the keys are few: each key is a time series.
func WithKeys() Option {
	return func(c *config) error {
		c.keys = true
		return nil
	}
}

// Observer returns an event.Observer that records its events with meter's
// instruments (see the package doc).
func Observer(meter metric.Meter, opts ...Option) (event.Observer, error) {
	if meter == nil {
		return event.Observer{}, errors.New("dsyncotel: nil meter")
	}
	var c config
	for _, o := range opts {
		if o == nil {
			return event.Observer{}, errors.New("dsyncotel: nil option")
		}
		if err := o(&c); err != nil {
			return event.Observer{}, err
		}
	}
	i, err := newInstruments(meter, c.keys)
	if err != nil {
		return event.Observer{}, err
	}
	i.zeroSeries()
	return i.observer(), nil
}

// Attribute keys.
const (
	attrKind    = attribute.Key("dsync.kind")
	attrOutcome = attribute.Key("dsync.outcome")
	attrCause   = attribute.Key("dsync.lost.cause")
	attrKey     = attribute.Key("dsync.key")
)

// attrs are an event's attributes: its kind, then more (an outcome, a
// cause), then its key with WithKeys.
func (i *instruments) attrs(key string, kind event.Kind, more ...attribute.KeyValue) metric.MeasurementOption {
	kv := append([]attribute.KeyValue{attrKind.String(string(kind))}, more...)
	if i.keys {
		kv = append(kv, attrKey.String(key))
	}
	return metric.WithAttributes(kv...)
}

// failure names why an acquisition failed.
func failure(err error) string {
	switch {
	case errors.Is(err, dsync.ErrHeld):
		return "held"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}

// Why holds are lost, the values of dsync.lost.cause.
var causes = []string{"lease", "suspended", "revoked", "stalled", "closed"}

// lossCause names why a hold was lost, from the error Observer.Lost was
// given: its work reported no progress within its progress deadline, an
// operator revoked its session, its Client was closed, its lease's
// deadline passed with the session suspended in what may be an outage
// of the whole store (dsync.ErrSuspended: the hold may be taken back,
// dsync.lease.outages counts those that were), or else its lease could
// not be confirmed in time (renewals failed, or the store no longer knew
// its session).
func lossCause(err error) string {
	switch {
	case errors.Is(err, dsync.ErrSuspended):
		return "suspended"
	case errors.Is(err, dsync.ErrStalled):
		return "stalled"
	case errors.Is(err, dsync.ErrRevoked):
		return "revoked"
	case errors.Is(err, dsync.ErrClosed):
		return "closed"
	}
	return "lease"
}

func (i *instruments) observer() event.Observer {
	ctx := context.Background()
	return event.Observer{
		Acquired: func(a event.Acquisition) {
			i.ages.began(a)
			i.acquire.Record(ctx, a.Wait.Seconds(), i.attrs(a.Key, a.Kind, attrOutcome.String("acquired")))
		},
		AcquireFailed: func(a event.Acquisition, err error) {
			i.acquire.Record(ctx, a.Wait.Seconds(), i.attrs(a.Key, a.Kind, attrOutcome.String(failure(err))))
		},
		Released: func(h event.Held) {
			i.ages.ended(h)
			i.hold.Record(ctx, h.Held.Seconds(), i.attrs(h.Key, h.Kind, attrOutcome.String("released")))
		},
		Lost: func(h event.Held, err error) {
			i.ages.ended(h)
			i.hold.Record(ctx, h.Held.Seconds(), i.attrs(h.Key, h.Kind, attrOutcome.String("lost")))
			i.lost.Add(ctx, 1, i.attrs(h.Key, h.Kind, attrCause.String(lossCause(err))))
		},
		Waiting: func(n int) { i.waiting.Record(ctx, int64(n)) },
		Renewed: func(r event.Renewal) {
			i.renewal.Record(ctx, r.Latency.Seconds())
			i.headroom.Record(ctx, r.Headroom.Seconds())
		},
		RenewFailed: func(error) { i.renewFailed.Add(ctx, 1) },
		Dropped:     func(n int) { i.dropped.Add(ctx, int64(n)) },
		DeadlockBroken: func(d event.Deadlock) {
			if i.keys {
				i.deadlocks.Add(ctx, 1, metric.WithAttributes(attrKey.String(d.Key)))
				return
			}
			i.deadlocks.Add(ctx, 1)
		},
		OutageRidden: func(o event.Outage) {
			i.outages.Add(ctx, 1)
			i.kept.Add(ctx, int64(o.Holds))
			i.suspended.Record(ctx, o.Resumed.Sub(o.Suspended).Seconds())
		},
	}
}
