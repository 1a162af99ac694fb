package fencetest

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

var trialsFlag = flag.Int("fencetest.trials", 0, "fencetest: trials per Run whose Options give none (0: 100)")

// Options sizes a run of the suite. The zero Options runs the
// -fencetest.trials flag's count of trials (100 without it), from a seed
// of the clock's, on keys of a fresh random prefix.
type Options struct {
	// Trials is how many trials to run, one key each.
	Trials int
	// Seed seeds the delays and the scenarios' choices; a failure's
	// report names it, so that a run can be repeated.
	Seed int64
	// KeyPrefix starts every key the suite writes; by default a fresh
	// random one, so that runs against a store that outlives them do not
	// meet.
	KeyPrefix string
	// Parallel is how many trials run at once (default 4).
	Parallel int
	// Timeout bounds each trial (default one minute); a trial that
	// exceeds it is reported as failed.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Trials <= 0 {
		o.Trials = *trialsFlag
		if o.Trials <= 0 {
			o.Trials = 100
		}
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = fmt.Sprintf("fencetest-%x-", uint64(time.Now().UnixNano())^uint64(o.Seed))
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	return o
}

// A Report is what a run found.
type Report struct {
	Seed   int64
	Trials int

	// Applied counts the writes sent (a retry is a write of its own)
	// that returned nil, Refused those refused with fence.ErrStale,
	// Unknown those that returned another error; Writes is their sum.
	Applied, Refused, Unknown int
	// Retries counts the writes sent again after an unknown outcome.
	Retries int

	// StaleWrites describes each trial in which a write under a lower
	// token applied after a write under a higher one: a paused holder's
	// write that returned nil after the next holder's had, or a register
	// left holding the value of a lower token than one that applied.
	StaleWrites []string
	// NotLinearizable names each key whose history has no linearization
	// against the contract's sequential model.
	NotLinearizable []string
	// Failures describes trials that could not be judged: an error of
	// Read, a trial over its Timeout.
	Failures []string
}

// Err returns nil if the run found nothing wrong. Otherwise it returns an
// error that says what, with the seed.
func (r Report) Err() error {
	if len(r.StaleWrites)+len(r.NotLinearizable)+len(r.Failures) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fencetest: seed %d, %d trials: %d stale writes, %d keys not linearizable, %d trials failed",
		r.Seed, r.Trials, len(r.StaleWrites), len(r.NotLinearizable), len(r.Failures))
	for _, group := range [][]string{r.StaleWrites, r.NotLinearizable, r.Failures} {
		for i, s := range group {
			if i == 5 {
				fmt.Fprintf(&b, "\n\t... and %d more", len(group)-i)
				break
			}
			b.WriteString("\n\t" + s)
		}
	}
	return errors.New(b.String())
}

func (r Report) String() string {
	return fmt.Sprintf("seed %d: %d trials, %d writes (%d applied, %d refused, %d unknown, %d retries); %d stale writes, %d keys not linearizable, %d failed",
		r.Seed, r.Trials, r.Writes(), r.Applied, r.Refused, r.Unknown, r.Retries,
		len(r.StaleWrites), len(r.NotLinearizable), len(r.Failures))
}

// Writes returns the count of writes sent: Applied + Refused + Unknown.
func (r Report) Writes() int { return r.Applied + r.Refused + r.Unknown }
