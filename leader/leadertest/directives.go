package leadertest

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/leader/operator"
)

var (
	_ operator.Directives       = (*MemoryMembers)(nil)
	_ operator.TransferRequests = (*MemoryMembers)(nil)
)

// PutDirective implements operator.Directives.
func (s *MemoryMembers) PutDirective(ctx context.Context, election string, d operator.Directive) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.directives == nil {
		s.directives = make(map[string]map[string]operator.Directive)
	}
	if s.directives[election] == nil {
		s.directives[election] = make(map[string]operator.Directive)
	}
	key := d.Key()
	if _, ok := s.directives[election][key]; ok {
		return fmt.Errorf("%w: %s/%s", operator.ErrDirectiveExists, election, key)
	}
	d.At = time.Now()
	s.directives[election][key] = d
	return nil
}

// Directives implements operator.Directives.
func (s *MemoryMembers) Directives(ctx context.Context, election string) ([]operator.Directive, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]operator.Directive, 0, len(s.directives[election]))
	for _, d := range s.directives[election] {
		out = append(out, d)
	}
	return out, nil
}

// TransferRequests implements operator.TransferRequests.
func (s *MemoryMembers) TransferRequests(ctx context.Context, election string, term uint64) ([]operator.Directive, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []operator.Directive
	for _, d := range s.directives[election] {
		if d.Kind == operator.DirectiveTransfer && d.Term == term {
			out = append(out, d)
		}
	}
	return out, nil
}

// PruneTransferRequests implements operator.TransferRequests.
func (s *MemoryMembers) PruneTransferRequests(ctx context.Context, election string, term uint64) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, d := range s.directives[election] {
		if d.Kind == operator.DirectiveTransfer && d.Term < term {
			delete(s.directives[election], key)
		}
	}
	return nil
}
