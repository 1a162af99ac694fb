package leadertest

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/leader"
)

var (
	_ leader.Directives       = (*MemoryMembers)(nil)
	_ leader.TransferRequests = (*MemoryMembers)(nil)
)

// PutDirective implements leader.Directives.
func (s *MemoryMembers) PutDirective(ctx context.Context, election string, d leader.Directive) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.directives == nil {
		s.directives = make(map[string]map[string]leader.Directive)
	}
	if s.directives[election] == nil {
		s.directives[election] = make(map[string]leader.Directive)
	}
	key := d.Key()
	if _, ok := s.directives[election][key]; ok {
		return fmt.Errorf("%w: %s/%s", leader.ErrDirectiveExists, election, key)
	}
	d.At = time.Now()
	s.directives[election][key] = d
	return nil
}

// Directives implements leader.Directives.
func (s *MemoryMembers) Directives(ctx context.Context, election string) ([]leader.Directive, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]leader.Directive, 0, len(s.directives[election]))
	for _, d := range s.directives[election] {
		out = append(out, d)
	}
	return out, nil
}

// TransferRequests implements leader.TransferRequests.
func (s *MemoryMembers) TransferRequests(ctx context.Context, election string, term uint64) ([]leader.Directive, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []leader.Directive
	for _, d := range s.directives[election] {
		if d.Kind == leader.DirectiveTransfer && d.Term == term {
			out = append(out, d)
		}
	}
	return out, nil
}

// PruneTransferRequests implements leader.TransferRequests.
func (s *MemoryMembers) PruneTransferRequests(ctx context.Context, election string, term uint64) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, d := range s.directives[election] {
		if d.Kind == leader.DirectiveTransfer && d.Term < term {
			delete(s.directives[election], key)
		}
	}
	return nil
}
