package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The bucket span. Gates exclude each other only within one span: a gate's
// ID names its bucket's number, and buckets of two spans have different
// numbers for the same time, so two segments whose processes run
// different spans never meet (segment.go). Every process on a store must
// therefore use the one its protocol document (ProtocolID) records.
//
// The document is inserted, never updated, and it goes when the store is
// emptied: the first process to write it after that decides the span. So
// a process checks it where it comes to rely on a segment it did not
// already rely on:
//
//   - A start reads the protocol document (inserting it if it is
//     missing) before it sends its gates and first claim, and reads it
//     again after they landed: it relies on its segment only if the
//     document then names its span (and the history its gates name:
//     history.go). Two starts of different spans in one history of the
//     store read one document, whichever inserted it: the start whose
//     span it does not name gives its claim up.
//   - A claim that joins the segment of a gate it read (a start that met
//     a gate) reads the document after the gate, and inserts it if it is
//     missing.
//   - A sweep reads it before it reads or deletes anything, since it
//     deletes gates by bucket number and judges keys idle by it, and
//     again before it drops gates: it drops none if the store's history
//     changed meanwhile (another span may be the store's since).
//
// Nothing else makes a process rely on a segment it did not rely on: a
// read of a key's queue (Queue) learns only more of the segment this
// process relies on already, in the history it learnt it in.
//
// What a process learnt of a segment it keeps, across an emptying too,
// and its next claim of the key joins that segment without reading the
// document. But a claim records the history its process learnt its
// segment in, and holds only in that history (history.go): a claim that
// holds relies on a segment learnt, by a start or a join, in the history
// it holds in, having read that history's document and found its span
// there. The document is one per history, with one span, so no history
// holds two segments of different spans that are relied on, whichever
// order their requests land in. (Before claims recorded it, a process
// that kept a segment of five-minute buckets across an emptying joined,
// in the next history, the segment of the same number a process of
// one-minute buckets had started, and held on the coverage it knew,
// until a start of the store's span held beside it:
// TestSegmentKnownBeforeAnEmptyingDoesNotHold.)

// ErrSpan reports that the store's processes do not agree on the bucket
// span: exclusion between segments needs one.
var ErrSpan = errors.New("the store's bucket span differs")

// SpanError is ErrSpan with the two spans: the store's, recorded in its
// protocol document, and the engine's.
type SpanError struct {
	Store, Engine time.Duration
}

func (e *SpanError) Error() string {
	return fmt.Sprintf("the store's bucket span is %v, this process's %v", e.Store, e.Engine)
}

// Is makes a *SpanError match ErrSpan.
func (e *SpanError) Is(target error) bool { return target == ErrSpan }

// Agree records this engine's bucket span as the store's, or adopts the
// store's: only an engine configured with Fixed refuses another span
// (ErrSpan); a document at ProtocolID that is not a protocol document is
// refused (ErrSpan) whatever fixed says. It must succeed before the
// engine claims. The engine's span
// does not change after that: a store that records another one later
// (emptied, and written first by a process of another span) has this
// engine's starts and joins refused with a *SpanError.
func (s *segments) Agree(ctx context.Context, fixed bool) error {
	// Read first, as confirmSpan does: past the store's first use the
	// document is there, and a fresh process (a cron job's) sends one
	// command here, not an insert refused and then the read.
	for range 2 {
		got, found, err := s.store.Get(ctx, ProtocolID)
		if err != nil {
			return err
		}
		if found {
			if err := s.adoptSpan(got, fixed); err != nil {
				return err
			}
			s.learnHistory(got.Nonce)
			return nil
		}
		d := s.protocolDoc()
		err = s.store.Insert(ctx, d)
		if err == nil {
			s.learnHistory(d.Nonce)
			return nil
		}
		if !errors.Is(err, ErrExists) {
			return err
		}
	}
	return fmt.Errorf("%w: the protocol document %q came and went", ErrSpan, ProtocolID)
}

// LearnSpan adopts the span the store's protocol document records, as
// Agree does, but only reads it: for reads of the keys' queues by an
// engine that has not agreed (and so claims nothing), which must write
// nothing. found is false when the store has no protocol document: the
// engine's span is left as it is. A document that is not a protocol
// document (another kind, or no positive span) is refused (ErrSpan),
// whatever fixed says, and so is another span if fixed (the engine was
// configured with one: a *SpanError) or if it is below 4 × the margin;
// the engine's span is then left as it is. Agree must still succeed
// before the engine claims.
func (s *segments) LearnSpan(ctx context.Context, fixed bool) (found bool, err error) {
	got, found, err := s.store.Get(ctx, ProtocolID)
	if err != nil || !found {
		return false, err
	}
	if err := s.adoptSpan(got, fixed); err != nil {
		return false, err
	}
	return true, nil
}

// adoptSpan takes the span of got, the store's document at ProtocolID,
// for this engine's (Agree and LearnSpan): nil when it is this engine's
// or was adopted. Only another span can be adopted: a document that is
// not a protocol document (another kind, or no positive span) is refused
// whatever fixed says; another span is refused if fixed (a *SpanError)
// or below 4 × the margin.
func (s *segments) adoptSpan(got Doc, fixed bool) error {
	err := s.sameSpan(got)
	var other *SpanError
	switch {
	case err == nil, fixed, !errors.As(err, &other):
		return err
	case got.Span < 4*s.cfg.Margin:
		return fmt.Errorf("%w: the store's span %v is below 4 × the margin %v", ErrSpan, got.Span, s.cfg.Margin)
	}
	s.spanNs.Store(int64(got.Span))
	return nil
}

// confirmSpan makes sure the store's protocol document names this
// engine's span: it reads it, and inserts it if it is missing. A
// *SpanError says it names another. It returns the document's nonce,
// which names the store's history (history.go).
func (s *segments) confirmSpan(ctx context.Context) (history string, err error) {
	if err := s.spanLostErr(); err != nil {
		return "", err
	}
	for range 2 {
		got, found, err := s.store.Get(ctx, ProtocolID)
		if err != nil {
			return "", err
		}
		if found {
			if err := s.sameSpan(got); err != nil {
				s.loseSpan(err)
				return "", err
			}
			s.learnHistory(got.Nonce)
			return got.Nonce, nil
		}
		// Missing: the store was emptied. The insert begins its next
		// history; landing late, it begins one that nobody relied on
		// before (history.go).
		d := s.protocolDoc()
		err = s.store.Insert(ctx, d)
		if err == nil {
			s.learnHistory(d.Nonce)
			return d.Nonce, nil
		}
		if !errors.Is(err, ErrExists) {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: the protocol document %q came and went", ErrSpan, ProtocolID)
}

// loseSpan records, if err is a *SpanError, that the store records
// another span than this engine's since it agreed on one: its gates no
// longer meet those of the store's span, so it forgets every segment it
// relied on and relies on none again (keys.loseAll). Its starts
// and joins are refused with the error; a process adopts the store's
// span by starting again.
func (s *segments) loseSpan(err error) {
	if se, ok := s.spanLost(err); ok {
		s.keys.loseAll(se)
	}
}

// spanLostErr is the *SpanError that made this engine lose its span, nil
// if it has not: once lost, it reads and writes no protocol document
// again (a start that wrote the document after another emptying would
// make the store this engine's span again, refusing the processes of
// the span it had, while this engine relies on nothing it learns).
func (s *segments) spanLostErr() error { return s.keys.lostSpan() }

// sameSpan checks that the protocol document d names this engine's span.
func (s *segments) sameSpan(d Doc) error {
	if d.Kind != KindProtocol || d.Span <= 0 {
		return fmt.Errorf("%w: the protocol document %q is not one", ErrSpan, ProtocolID)
	}
	if span := s.span(); s.spansDiffer(d.Span, span) {
		return &SpanError{Store: d.Span, Engine: span}
	}
	return nil
}

// protocolDoc is the store's protocol document as this engine writes it,
// with a nonce of its own: the history it begins, if it lands (history.go).
func (s *segments) protocolDoc() Doc {
	return Doc{ID: ProtocolID, Kind: KindProtocol, Span: s.span(), Nonce: s.cfg.NewID(), Sent: s.clock.ServerNow().Latest}
}

// Span is the bucket span in force: Config.Span, or the store's once
// Agree has run.
func (s *segments) Span() time.Duration { return s.span() }

// span is the bucket length in force.
func (s *segments) span() time.Duration { return time.Duration(s.spanNs.Load()) }
