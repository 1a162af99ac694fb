package fencetest_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencetest"
)

// memResource is a register per key behind a fence.Memory: the smallest
// adapter that keeps the contract. Its plant, when set, breaks it.
type memResource struct {
	marks fence.Memory
	plant plant
	lossy bool // some writes that applied report an error: a lost reply

	mu     sync.Mutex
	reg    map[string]int64
	rng    *rand.Rand
	inside map[string]func() // the release of each key's admitted write
}

type plant int

const (
	keepsContract  plant = iota
	skipsCheck           // writes without asking the fence
	releasesEarly        // asks the fence, then lets the next writer in before it writes
	refusesNothing       // asks the fence but writes even when refused
	refusesEqual         // refuses a token equal to the mark: one hold writes once
	sessionFrees         // the admission is a session's: ending it lets the next writer in
)

func newMem(p plant) *memResource {
	return &memResource{plant: p, reg: map[string]int64{}, rng: rand.New(rand.NewPCG(1, 2)), inside: map[string]func(){}}
}

func (m *memResource) Write(ctx context.Context, w fencetest.Write) error {
	if m.plant == refusesEqual {
		if m.marks.Mark(w.Key) == w.Token {
			return &fence.StaleError{Key: w.Key, Token: w.Token}
		}
	}
	if m.plant != skipsCheck {
		release, err := m.marks.Admit(ctx, w.Key, w.Token)
		switch {
		case errors.Is(err, fence.ErrStale) && m.plant == refusesNothing:
			release = func() {}
		case err != nil:
			return err
		}
		if m.plant == releasesEarly {
			release()
		}
		defer release()
		m.mu.Lock()
		m.inside[w.Key] = release
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			delete(m.inside, w.Key)
			m.mu.Unlock()
		}()
	}
	if w.Admitted != nil {
		if err := w.Admitted(ctx); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reg[w.Key] = w.Value
	if m.lossy && m.rng.IntN(5) == 0 {
		return errors.New("reply lost")
	}
	return nil
}

// EndSession implements fencetest.SessionEnder: a fence.Memory has no
// session, and its admissions outlive nothing; the planted sessionFrees
// lets the next writer in, as a turn that was a lock of the session's
// would be freed.
func (m *memResource) EndSession(_ context.Context, key string) error {
	m.mu.Lock()
	release := m.inside[key]
	m.mu.Unlock()
	if m.plant == sessionFrees && release != nil {
		release()
	}
	return nil
}

func (m *memResource) Read(_ context.Context, key string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reg[key], nil
}

func TestMemoryKeepsTheContract(t *testing.T) {
	fencetest.Run(t, newMem(keepsContract), fencetest.Options{Trials: 300})
}

func TestLostRepliesKeepTheContract(t *testing.T) {
	m := newMem(keepsContract)
	m.lossy = true
	fencetest.Run(t, m, fencetest.Options{Trials: 300})
}

// Each planted adapter that lets a stale write in must be caught: with
// stale writes, and with histories that are not linearizable.
func TestPlantedAdaptersAreCaught(t *testing.T) {
	for name, p := range map[string]plant{"skips the check": skipsCheck, "releases early": releasesEarly, "refuses nothing": refusesNothing, "frees its turn when its session ends": sessionFrees} {
		t.Run(name, func(t *testing.T) {
			rep, err := fencetest.Check(t.Context(), newMem(p), fencetest.Options{Trials: 90})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep)
			if len(rep.StaleWrites) == 0 || len(rep.NotLinearizable) == 0 {
				t.Errorf("a planted adapter that %s was not caught: %s", name, rep)
			}
			if rep.Err() == nil {
				t.Error("Report.Err is nil for a run with findings")
			}
		})
	}
}

// An adapter that refuses a write it must accept is caught by the
// history's check.
func TestPlantedRefusalIsCaught(t *testing.T) {
	rep, err := fencetest.Check(t.Context(), newMem(refusesEqual), fencetest.Options{Trials: 90})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if len(rep.NotLinearizable) == 0 {
		t.Errorf("an adapter that refuses a token equal to the mark was not caught: %s", rep)
	}
}
