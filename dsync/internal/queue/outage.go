package queue

// The outage rule: when a session that stopped renewing may be judged
// dead, given the store's record of when it was up.
//
// Evidence is a set of spans of store time. Each span [From, To] stands for
// stamps the store applied (the server time of a renewal it accepted, as
// the store stamped it): a stamp is a span with From == To, and a span
// that a session's writer merged from its own stamps stands for stamps no
// more than that writer's break apart. A chain is a maximal run of the
// union of the spans with no gap longer than the break H (a gap of exactly
// H does not break it). The up-run of chain C after x is
// To(C) − max(From(C), x). With Ê the session's highest known expiry and
// x = Ê − TTL (about when its last counted renewal was sent):
//
//	Dead(ev, x, Ê)  ⇔  some chain has an up-run of at least TTL after x,
//	                   or some stamp is at or after Ê + Grace.
//
// The rule is monotone: more spans, a smaller x or a smaller Ê never turn
// a verdict of dead into not dead (outage_test.go checks it). That is what
// lets two processes that read the same record at different times, one
// judging with a later x and expiry than the other, never disagree in the
// unsafe direction: the later reader, with more evidence and the smaller x,
// finds dead whatever the earlier found dead.
//
// Spans that end before x − H (Since) change no verdict on x as long as x
// is at most Ê + Grace + H (so for x = Ê − TTL): a store asked for the
// evidence since x − H may leave them out, or return them.
//
// A span merged by a writer whose break exceeds H hides gaps that H would
// break on: it can only lengthen an up-run, so it takes credit from the
// session judged, never gives it.
//
// Grace is the longest an outage is credited: past Ê + Grace a stamp alone
// proves the session dead. An OutageRule has a positive Grace. A claim
// with no grace (zero) is judged by today's rule, its expiry before the
// earliest possible server time now, which its caller applies without an
// OutageRule: NewOutageRule refuses a zero grace rather than stand for it.
// Nothing here reads a clock or the store.

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// UpSpan is a span of store time whose ends are stamps the store applied,
// and whose stamps are no more than its writer's break apart (the driver
// contract's, which a store's record of up-time holds).
type UpSpan = driver.UpSpan

// MaxGrace is the longest grace an OutageRule takes. A verdict may rest on
// evidence up to Ê + Grace, and a store keeps a session's documents, and
// so their evidence, an hour past their expiry (dsync/mongo deletes them
// then): a grace well below that keeps the evidence in place for every
// verdict that needs it.
const MaxGrace = 10 * time.Minute

// errNoGrace refuses a zero grace (see the file's comment).
var errNoGrace = errors.New("outage rule: a zero grace is the rule by expiry alone (judge without an OutageRule)")

// OutageRule is the outage rule of one claim's terms: its session's TTL,
// and its grace. Its zero value is not usable: call NewOutageRule.
type OutageRule struct {
	ttl, grace time.Duration
}

// NewOutageRule returns the rule for a session of the given TTL judged
// with the given grace. It refuses a TTL that is not positive, a zero
// grace (the caller's rule is then today's), and a grace that is negative
// or above MaxGrace.
func NewOutageRule(ttl, grace time.Duration) (OutageRule, error) {
	switch {
	case ttl <= 0:
		return OutageRule{}, fmt.Errorf("outage rule: TTL %v is not positive", ttl)
	case grace == 0:
		return OutageRule{}, errNoGrace
	case grace < 0 || grace > MaxGrace:
		return OutageRule{}, fmt.Errorf("outage rule: grace %v is outside (0, %v]", grace, MaxGrace)
	}
	return OutageRule{ttl: ttl, grace: grace}, nil
}

// Break is H, the longest gap inside a chain: half the TTL. An outage no
// longer than H goes uncredited.
func (r OutageRule) Break() time.Duration { return r.ttl / 2 }

// Since is where a read of evidence for a verdict on x may start: x − H.
// Spans that end earlier change no verdict on x (see the file's comment).
func (r OutageRule) Since(x time.Time) time.Time { return x.Add(-r.Break()) }

// Dead reports whether ev proves the session dead: a chain with an up-run
// of at least the TTL after x, or a stamp at or after expiry + the grace.
// It does not change ev. It fails, judging nothing, on a span whose To is
// before its From.
func (r OutageRule) Dead(ev []UpSpan, x, expiry time.Time) (bool, error) {
	if r.ttl <= 0 {
		return false, errors.New("outage rule: not made by NewOutageRule")
	}
	chains, err := Chains(ev, r.Break())
	if err != nil {
		return false, err
	}
	limit := expiry.Add(r.grace)
	for _, c := range chains {
		// A chain's To is its latest stamp.
		if !c.To.Before(limit) {
			return true, nil
		}
		from := c.From
		if from.Before(x) {
			from = x
		}
		if c.To.Sub(from) >= r.ttl {
			return true, nil
		}
	}
	return false, nil
}

// Chains merges ev into its chains under the break brk: the maximal runs
// of its union with no gap longer than brk, in increasing order, apart from
// each other by more than brk. A session's writer merges its own stamps
// so, under its own break, before it stores them. It does not change ev.
// It fails on a span whose To is before its From, or a negative brk.
func Chains(ev []UpSpan, brk time.Duration) ([]UpSpan, error) {
	if brk < 0 {
		return nil, fmt.Errorf("outage rule: negative break %v", brk)
	}
	for _, s := range ev {
		if s.To.Before(s.From) {
			return nil, fmt.Errorf("outage rule: span [%v, %v] ends before it starts", s.From, s.To)
		}
	}
	sorted := slices.Clone(ev)
	slices.SortFunc(sorted, func(a, b UpSpan) int { return a.From.Compare(b.From) })
	var out []UpSpan
	for _, s := range sorted {
		if n := len(out); n > 0 && s.From.Sub(out[n-1].To) <= brk {
			if s.To.After(out[n-1].To) {
				out[n-1].To = s.To
			}
			continue
		}
		out = append(out, s)
	}
	return out, nil
}
