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

// HintKey implements driver.PeerStore.
func (r roles) HintKey(ctx context.Context, key []byte) ([]byte, error) {
	var got []byte
	if err := r.s.do(ctx, Call{Op: "HintKey", Write: true}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		if r.s.hintKey == nil {
			r.s.hintKey = bytes.Clone(key)
		}
		got = bytes.Clone(r.s.hintKey)
	}); err != nil {
		return nil, err
	}
	return got, nil
}

// PutPeer implements driver.PeerStore.
func (r roles) PutPeer(ctx context.Context, p driver.Peer) error {
	return r.s.do(ctx, Call{Op: "PutPeer", Write: true}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		if r.s.peers == nil {
			r.s.peers = make(map[string]driver.Peer)
		}
		r.s.peers[p.ID] = p
	})
}

// Peers implements driver.PeerStore.
func (r roles) Peers(ctx context.Context, after time.Time) ([]driver.Peer, error) {
	var ps []driver.Peer
	if err := r.s.do(ctx, Call{Op: "Peers"}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		for _, p := range r.s.peers {
			if p.ExpiresAt.After(after) {
				ps = append(ps, p)
			}
		}
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(ps, func(a, b driver.Peer) int { return bytes.Compare([]byte(a.ID), []byte(b.ID)) })
	return ps, nil
}
