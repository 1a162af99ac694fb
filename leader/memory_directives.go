package leader

import (
	"context"
	"fmt"
	"time"
)

var (
	_ Directives       = (*MemoryMembers)(nil)
	_ TransferRequests = (*MemoryMembers)(nil)
)

// PutDirective implements Directives.
func (s *MemoryMembers) PutDirective(ctx context.Context, election string, d Directive) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.directives == nil {
		s.directives = make(map[string]map[string]Directive)
	}
	if s.directives[election] == nil {
		s.directives[election] = make(map[string]Directive)
	}
	key := d.Key()
	if _, ok := s.directives[election][key]; ok {
		return fmt.Errorf("%w: %s/%s", ErrDirectiveExists, election, key)
	}
	d.At = time.Now()
	s.directives[election][key] = d
	return nil
}

// Directives implements Directives.
func (s *MemoryMembers) Directives(ctx context.Context, election string) ([]Directive, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Directive, 0, len(s.directives[election]))
	for _, d := range s.directives[election] {
		out = append(out, d)
	}
	return out, nil
}

// TransferRequests implements TransferRequests.
func (s *MemoryMembers) TransferRequests(ctx context.Context, election string, term uint64) ([]Directive, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Directive
	for _, d := range s.directives[election] {
		if d.Kind == DirectiveTransfer && d.Term == term {
			out = append(out, d)
		}
	}
	return out, nil
}

// PruneTransferRequests implements TransferRequests.
func (s *MemoryMembers) PruneTransferRequests(ctx context.Context, election string, term uint64) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, d := range s.directives[election] {
		if d.Kind == DirectiveTransfer && d.Term < term {
			delete(s.directives[election], key)
		}
	}
	return nil
}
