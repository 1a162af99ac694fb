package chain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/chain"
)

type fixedClock struct{}

func (fixedClock) ServerNow() chain.Interval { return chain.Interval{} }
func (fixedClock) Mono() time.Duration       { return 0 }

func TestNewChecksItsArguments(t *testing.T) {
	store := chain.NewMemStore(nil)
	if _, err := chain.New(store, fixedClock{}, chain.DefaultConfig()); err != nil {
		t.Fatalf("the default configuration is refused: %v", err)
	}
	short := chain.DefaultConfig()
	short.PruneDelay = short.ViewTrust + short.AcquireWindow
	for _, tc := range []struct {
		name  string
		store chain.Store
		clock chain.Clock
		cfg   chain.Config
		want  string
	}{
		{"nil store", nil, fixedClock{}, chain.DefaultConfig(), "nil store"},
		{"nil clock", store, nil, chain.DefaultConfig(), "nil store or clock"},
		{"prune delay too short", store, fixedClock{}, short, "PruneDelay"},
		{"zero config", store, fixedClock{}, chain.Config{}, "positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chain.New(tc.store, tc.clock, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
