package memory

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Peers of direct hints (driver.PeerStore): the hint key and each
// process's address.

var (
	_ driver.PeerStore = (*Store)(nil)
	_ driver.PeerStore = (*Process)(nil)
)

// HintKey implements driver.PeerStore.
func (s *Store) HintKey(ctx context.Context, key []byte) ([]byte, error) {
	if err := live(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hintKey == nil {
		s.hintKey = bytes.Clone(key)
	}
	return bytes.Clone(s.hintKey), nil
}

// PutPeer implements driver.PeerStore.
func (s *Store) PutPeer(ctx context.Context, p driver.Peer) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peers == nil {
		s.peers = make(map[string]driver.Peer)
	}
	s.peers[p.ID] = p
	return nil
}

// Peers implements driver.PeerStore.
func (s *Store) Peers(ctx context.Context, after time.Time) ([]driver.Peer, error) {
	if err := live(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []driver.Peer
	for _, p := range s.peers {
		if p.ExpiresAt.After(after) {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b driver.Peer) int { return bytes.Compare([]byte(a.ID), []byte(b.ID)) })
	return ps, nil
}

func (s *Process) HintKey(ctx context.Context, key []byte) ([]byte, error) {
	if err := s.gate(ctx, nil); err != nil {
		return nil, err
	}
	return s.Store.HintKey(ctx, key)
}

func (s *Process) PutPeer(ctx context.Context, p driver.Peer) error {
	if err := s.gate(ctx, func() { _ = s.Store.PutPeer(lateCtx, p) }); err != nil {
		return err
	}
	return s.Store.PutPeer(ctx, p)
}

func (s *Process) Peers(ctx context.Context, after time.Time) ([]driver.Peer, error) {
	if err := s.gate(ctx, nil); err != nil {
		return nil, err
	}
	return s.Store.Peers(ctx, after)
}
