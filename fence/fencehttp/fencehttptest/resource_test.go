package fencehttptest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencehttp"
	"github.com/go-dsync/dsync/fence/fencehttp/fencehttptest"
	"github.com/go-dsync/dsync/fence/fencetest"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// trials is the count of each conformance run: 10,000 in the long run
// (DSYNC_LONG=1, as CI sets), else 0, which leaves it to the
// -fencetest.trials flag (100 without it).
func trials() int {
	if longtest.Enabled() {
		return 10000
	}
	return 0
}

// TestConformanceMemory: the HTTP adapter with a fence.Memory keeps the
// contract.
func TestConformanceMemory(t *testing.T) {
	r := fencehttptest.NewResource(new(fence.Memory))
	defer r.Close()
	fencetest.Run(t, r, fencetest.Options{Trials: trials()})
}

// TestConformanceSharedMemory: two instances that share one mark store
// are one fenced service.
func TestConformanceSharedMemory(t *testing.T) {
	marks := new(fence.Memory)
	r := fencehttptest.NewResource(marks, marks)
	defer r.Close()
	fencetest.Run(t, r, fencetest.Options{Trials: trials()})
}

// TestPlantedUnfenced: the service without fencehttp.Handler is caught.
func TestPlantedUnfenced(t *testing.T) {
	r := fencehttptest.NewUnfenced()
	defer r.Close()
	expectStale(t, r)
}

// TestPlantedMemoryPerInstance: two instances, each with a fence.Memory
// of its own, are not one fenced service: a paused holder's request
// that reaches the other instance than the next holder's is admitted.
func TestPlantedMemoryPerInstance(t *testing.T) {
	r := fencehttptest.NewResource(new(fence.Memory), new(fence.Memory))
	defer r.Close()
	expectStale(t, r)
}

func expectStale(t *testing.T, r fencetest.Resource) {
	t.Helper()
	rep, err := fencetest.Check(context.Background(), r, fencetest.Options{Trials: 30, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.StaleWrites) == 0 {
		t.Fatalf("no stale writes found in a planted service:\n%v", rep)
	}
	t.Logf("caught: %d stale writes in %d trials (%d writes)", len(rep.StaleWrites), rep.Trials, rep.Writes())
}

// TestAdmittedRunsInsideTheAdmission: a write's Admitted runs in the
// service's handler, under the admission of the write's key and token,
// and its error is the write's.
func TestAdmittedRunsInsideTheAdmission(t *testing.T) {
	r := fencehttptest.NewResource(new(fence.Memory))
	defer r.Close()
	ctx := context.Background()
	called := false
	err := r.Write(ctx, fencetest.Write{Key: "k", Token: 3, Value: 7, Admitted: func(ctx context.Context) error {
		called = true
		if key, token, ok := fencehttp.Token(ctx); !ok || key != "k" || token != 3 {
			t.Errorf("Admitted ran outside the admission: Token = %q, %d, %v", key, token, ok)
		}
		return nil
	}})
	if err != nil || !called {
		t.Fatalf("Write = %v, Admitted called: %v", err, called)
	}
	if v, _ := r.Read(ctx, "k"); v != 7 {
		t.Fatalf("register %d, want 7", v)
	}
	abandon := errors.New("abandoned")
	err = r.Write(ctx, fencetest.Write{Key: "k", Token: 3, Value: 8, Admitted: func(context.Context) error { return abandon }})
	if !errors.Is(err, abandon) {
		t.Fatalf("Write = %v, want Admitted's error", err)
	}
	if v, _ := r.Read(ctx, "k"); v != 7 {
		t.Fatalf("register %d after an abandoned write, want 7", v)
	}
	if err := r.Write(ctx, fencetest.Write{Key: "k", Token: 2, Value: 9}); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("Write under a stale token = %v, want fence.ErrStale", err)
	}
}
