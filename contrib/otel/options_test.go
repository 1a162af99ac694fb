package dsyncotel_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

	dsyncotel "github.com/go-dsync/dsync/contrib/otel"
)

// TestObserverRefusesBadInput: a nil meter and a nil Option are errors
// Observer returns; WithKeys is taken.
func TestObserverRefusesBadInput(t *testing.T) {
	meter := noop.NewMeterProvider().Meter("test")
	if _, err := dsyncotel.Observer(nil); err == nil || !strings.Contains(err.Error(), "nil meter") {
		t.Errorf("Observer(nil) = %v, want a nil meter's error", err)
	}
	if _, err := dsyncotel.Observer(meter, nil); err == nil || !strings.Contains(err.Error(), "nil option") {
		t.Errorf("Observer(meter, nil) = %v, want a nil option's error", err)
	}
	if _, err := dsyncotel.Observer(meter, dsyncotel.WithKeys()); err != nil {
		t.Errorf("Observer(meter, WithKeys()) = %v", err)
	}
}
