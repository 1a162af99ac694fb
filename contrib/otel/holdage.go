package dsyncotel

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/go-dsync/dsync/dsync/event"
)

// The age of the oldest hold a process has now (dsync.hold.age): the
// histogram dsync.hold.duration only learns of a hold when it ends, so a
// hold that never ends (a job stuck under its lock) shows nowhere else.
// The holds are kept from Acquired to Released or Lost, by key, kind and
// token (a Semaphore's holds of one key differ by token), and measured
// when the meter collects.

// holdID names a hold the observer was told of.
type holdID struct {
	key   string
	kind  event.Kind
	token uint64
}

// holdAges keeps when each hold of this process began, as the observer
// learned of it.
type holdAges struct {
	now  func() time.Time
	keys bool

	mu    sync.Mutex
	since map[holdID]time.Time
}

func newHoldAges(now func() time.Time, keys bool) *holdAges {
	return &holdAges{now: now, keys: keys, since: map[holdID]time.Time{}}
}

func (h *holdAges) began(a event.Acquisition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since[holdID{a.Key, a.Kind, a.Token}] = h.now()
}

func (h *holdAges) ended(e event.Held) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, holdID{e.Key, e.Kind, e.Token})
}

// observe reports the age of the oldest hold of each kind (and key, with
// WithKeys) held now; nothing when nothing is held.
func (h *holdAges) observe(_ context.Context, o metric.Float64Observer) error {
	type series struct {
		kind event.Kind
		key  string
	}
	now := h.now()
	oldest := map[series]time.Duration{}
	h.mu.Lock()
	for id, t := range h.since {
		s := series{kind: id.kind}
		if h.keys {
			s.key = id.key
		}
		oldest[s] = max(oldest[s], now.Sub(t))
	}
	h.mu.Unlock()
	for s, age := range oldest {
		var kv []attribute.KeyValue
		kv = append(kv, attrKind.String(string(s.kind)))
		if h.keys {
			kv = append(kv, attrKey.String(s.key))
		}
		o.Observe(age.Seconds(), metric.WithAttributes(kv...))
	}
	return nil
}
