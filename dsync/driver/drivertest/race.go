package drivertest

import (
	"errors"
	"sync"
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
)

// racers is how many goroutines race to insert one record.
const racers = 8

// raceOnce runs insert(i) for each of racers goroutines at once, each
// inserting the same record (but for what i changes), and returns the
// index of the one that succeeded, failing t unless exactly one did and
// every other got ErrExists; what names the insert.
func raceOnce(t *testing.T, what string, insert func(i int) error) int {
	t.Helper()
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { errs[i] = insert(i) })
	}
	wg.Wait()
	return oneWinner(t, what, errs)
}

// oneWinner returns the index of the one nil error of errs, failing t
// unless exactly one is nil and every other is ErrExists.
func oneWinner(t *testing.T, what string, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Fatalf("%s by racers %d and %d both succeeded; want one", what, winner, i)
		case !errors.Is(err, driver.ErrExists):
			t.Fatalf("%s by racer %d: %v; want nil or ErrExists", what, i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no %s succeeded", what)
	}
	return winner
}
