package wake

import (
	"context"
	"log/slog"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
)

// Direct hints on by default on loopback: how a Client given no choice of
// hints settles its feed (Env.Settle). If the store reports that it is
// reached over loopback, the feed is direct hints listening on listen over
// inner, the store's feed (nil if none); else inner alone. The Hub settles
// it in the background, after the Client's first claim ends or as its
// first waiter starts to wait (settle.go): asking the store, and the
// hints' key and records, cost a fresh process's first Lock nothing, and
// until then its waiters poll (hints only ever wake them sooner). A
// Client that so takes hints says so once, at Info, with where it
// listens, once the Hub follows the hints: its processes may not be all
// that use the store (docs/operations.md, "On by default on loopback").
// If the hints cannot start, it says why at Warn and settles on inner.

// LoopbackHints returns the Settle of a Client whose store is store, as
// above, or nil if the store cannot say how it is reached (no
// driver.Roles.Loopback) or carry hints (no driver.Roles.Peers). made, if
// not nil, is given the hints' feed as it is made; settled is called once
// the feed is settled, with or without hints.
func LoopbackHints(store driver.Store, inner driver.Feed, listen string, logger *slog.Logger,
	made func(*hint.Feed), settled func()) func(context.Context) Settled {
	roles := store.Roles()
	r := roles.Loopback
	if r == nil || roles.Peers == nil {
		return nil
	}
	return func(ctx context.Context) Settled {
		if r.Loopback(ctx) {
			hf, err := hint.New(store, inner, hint.Config{Listen: listen, Logger: logger})
			if err == nil {
				if made != nil {
					made(hf)
				}
				return Settled{Feed: hf, Direct: true, Followed: func() {
					if addr := hf.Addr(); addr != "" { // "": it could not listen, and said so
						logger.Info(`dsync: direct hints on by default, as the store is reached over loopback (ClientWithHints("", "") turns them off)`,
							slog.String("listen", addr))
					}
					settled()
				}}
			}
			logger.Warn("dsync: direct hints are off: " + err.Error())
		}
		defer settled()
		return Settled{Feed: inner, Peers: PeersOf(store, false)}
	}
}
