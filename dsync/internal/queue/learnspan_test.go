package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestLearnSpan: an engine that reads before it agrees adopts the span
// of the store's protocol document, as Agree does, and writes nothing:
// with no document it keeps its own span (and inserts none); a document
// of its own span or, unless its span is fixed, of another span at least
// 4 × the margin is adopted; another span when fixed, one below 4 × the
// margin, and a document that is not a protocol document are refused
// with ErrSpan, and the engine's span is left as it was.
func TestLearnSpan(t *testing.T) {
	cfg := queue.DefaultConfig()
	own := cfg.Span
	protocol := func(span time.Duration) *queue.Doc {
		return &queue.Doc{ID: queue.ProtocolID, Kind: queue.KindProtocol, Span: span, Nonce: "history"}
	}
	tests := []struct {
		name      string
		doc       *queue.Doc // the store's protocol document; nil: none
		fixed     bool
		wantFound bool
		wantErr   error
		wantSpan  time.Duration
	}{
		{name: "absent", wantSpan: own},
		{name: "absent, fixed", fixed: true, wantSpan: own},
		{name: "its own span", doc: protocol(own), wantFound: true, wantSpan: own},
		{name: "its own span, fixed", doc: protocol(own), fixed: true, wantFound: true, wantSpan: own},
		{name: "another span", doc: protocol(2 * own), wantFound: true, wantSpan: 2 * own},
		{name: "another span, fixed", doc: protocol(2 * own), fixed: true, wantErr: queue.ErrSpan, wantSpan: own},
		{name: "another span below 4 × the margin", doc: protocol(cfg.Margin), wantErr: queue.ErrSpan, wantSpan: own},
		{name: "no span", doc: protocol(0), wantErr: queue.ErrSpan, wantSpan: own},
		{name: "a negative span", doc: protocol(-own), wantErr: queue.ErrSpan, wantSpan: own},
		{
			name:    "not a protocol document",
			doc:     &queue.Doc{ID: queue.ProtocolID, Kind: queue.KindClaim, Span: 2 * own, Nonce: "n"},
			wantErr: queue.ErrSpan, wantSpan: own,
		},
		{
			name:  "not a protocol document, fixed",
			doc:   &queue.Doc{ID: queue.ProtocolID, Kind: queue.KindClaim, Span: 2 * own, Nonce: "n"},
			fixed: true, wantErr: queue.ErrSpan, wantSpan: own,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := memory.New()
			if tc.doc != nil {
				if err := mem.Insert(ctx, *tc.doc); err != nil {
					t.Fatal(err)
				}
			}
			e, err := queue.New(mem, fixedClock{}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			found, err := e.LearnSpan(ctx, tc.fixed)
			if found != tc.wantFound || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("LearnSpan(fixed %v) = %v, %v; want %v, %v", tc.fixed, found, err, tc.wantFound, tc.wantErr)
			}
			if got := e.Span(); got != tc.wantSpan {
				t.Errorf("span after LearnSpan = %v, want %v", got, tc.wantSpan)
			}
			// It only reads: the store's protocol document is as it was
			// (none stays none).
			got, stored, err := mem.Get(ctx, queue.ProtocolID)
			switch {
			case err != nil:
				t.Fatal(err)
			case stored != (tc.doc != nil):
				t.Errorf("after LearnSpan the store has a protocol document: %v, want %v", stored, tc.doc != nil)
			case stored && (got.Span != tc.doc.Span || got.Kind != tc.doc.Kind || got.Nonce != tc.doc.Nonce):
				t.Errorf("after LearnSpan the protocol document is %+v, want %+v", got, *tc.doc)
			}
		})
	}
}

// TestLearnSpanThenAgree: a span learnt by reading is the one Agree then
// finds the store to record, so agreeing changes nothing; and an engine
// that learnt nothing (no document) agrees by inserting its own.
func TestLearnSpanThenAgree(t *testing.T) {
	ctx := context.Background()
	cfg := queue.DefaultConfig()
	mem := memory.New()
	if err := mem.Insert(ctx, queue.Doc{ID: queue.ProtocolID, Kind: queue.KindProtocol, Span: 3 * cfg.Span, Nonce: "h"}); err != nil {
		t.Fatal(err)
	}
	e, err := queue.New(mem, fixedClock{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if found, err := e.LearnSpan(ctx, false); !found || err != nil {
		t.Fatalf("LearnSpan = %v, %v; want true, nil", found, err)
	}
	if err := e.Agree(ctx, true); err != nil {
		t.Errorf("Agree(fixed) after learning the store's span: %v", err)
	}
	if got := e.Span(); got != 3*cfg.Span {
		t.Errorf("span = %v, want the store's %v", got, 3*cfg.Span)
	}

	empty := memory.New()
	e2, err := queue.New(empty, fixedClock{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if found, err := e2.LearnSpan(ctx, false); found || err != nil {
		t.Fatalf("LearnSpan of an empty store = %v, %v; want false, nil", found, err)
	}
	if err := e2.Agree(ctx, false); err != nil {
		t.Fatal(err)
	}
	if d, found, err := empty.Get(ctx, queue.ProtocolID); err != nil || !found || d.Span != cfg.Span {
		t.Errorf("after Agree the store's protocol document = %+v, %v, %v; want one of span %v", d, found, err, cfg.Span)
	}
}

// TestAgreeRefusesNotAProtocolDocument: Agree, as LearnSpan, refuses a
// document at the protocol ID that is not a protocol document (another
// kind) whatever fixed says, and keeps its own span (nor takes its nonce);
// unfixed, it adopted both when its span was at least 4 × the margin.
func TestAgreeRefusesNotAProtocolDocument(t *testing.T) {
	cfg := queue.DefaultConfig()
	for _, fixed := range []bool{false, true} {
		ctx := context.Background()
		mem := memory.New()
		if err := mem.Insert(ctx, queue.Doc{ID: queue.ProtocolID, Kind: queue.KindClaim, Span: 2 * cfg.Span, Nonce: "n"}); err != nil {
			t.Fatal(err)
		}
		e, err := queue.New(mem, fixedClock{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Agree(ctx, fixed); !errors.Is(err, queue.ErrSpan) {
			t.Errorf("Agree(fixed %v) with a claim at the protocol ID = %v, want %v", fixed, err, queue.ErrSpan)
		}
		if got := e.Span(); got != cfg.Span {
			t.Errorf("Agree(fixed %v): span = %v, want its own %v", fixed, got, cfg.Span)
		}
	}
}
