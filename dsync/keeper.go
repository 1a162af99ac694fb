package dsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/internal/ctxerr"
	"github.com/go-dsync/dsync/dsync/internal/lease"
)

// The Client's keeper of its lease (dsync/internal/lease): one session
// that every hold and waiting claim of its primitives shares. This file
// is the Client's side of it: the calls the keeper makes, and where it
// reports.

// keeper is the Client's lease keeper, over its holds; session is one of
// its sessions.
type (
	keeper  = lease.Keeper[*hold]
	session = lease.Session[*hold]
)

// newKeeper returns c's keeper of the lease with parameters p.
func newKeeper(c *Client, p lease.Params) *keeper {
	return lease.New(p, lease.Env[*hold]{
		Open:         c.openSession,
		Renew:        c.renewSession,
		Revocations:  c.roles.Revocations,
		CoverEnd:     c.eng.CoverEnd,
		Refresh:      c.eng.Refresh,
		Span:         c.eng.Span,
		ServerLatest: func() time.Time { return c.store.ServerTime().Latest },
		Go:           c.running.Go,
		Logger:       c.cfg.logger,
		Renewed: func(latency, headroom time.Duration) {
			r := event.Renewal{TTL: p.TTL, Latency: latency, Headroom: headroom}
			c.observe(func(o *event.Observer) {
				if o.Renewed != nil {
					o.Renewed(r)
				}
			})
		},
		Outcome: c.renewFailed.Store,
		RenewFailed: func(holds []*hold, err error, level slog.Level) {
			reportRenewal(holds, err, level)
			c.observe(func(o *event.Observer) {
				if o.RenewFailed != nil {
					o.RenewFailed(err)
				}
			})
		},
		RefreshFailed: func(holds []*hold, err error) {
			err = fmt.Errorf("dsync: keep segments covered: %w", spanError(c.cfg.spanSet, err))
			for p := range usersOf(holds) {
				p.report(err)
			}
		},
		Suspend: c.eng.SuspendOn,
		Probe: func(ctx context.Context, id string) error {
			_, _, err := c.store.GetSession(ctx, id) // a read: nothing the protocol writes
			return err
		},
		Resumed: c.resumed,
		Release: func(h *hold) { c.inBackground(func() { h.endKept(context.Background()) }) },
		Lapsed:  func(h *hold) { c.inBackground(func() { h.p.releaseClaim(h, "its segment lapsed") }) },
		Errors: lease.Errors{Lost: ErrLost, Closed: ErrClosed, Revoked: ErrRevoked, Gone: ErrSessionGone, Suspended: ErrSuspended,
			Ended: func(err error) bool {
				var ended *ctxerr.Ended
				return errors.As(err, &ended)
			}},
	})
}

// usersOf returns the primitives holds are of, each once.
func usersOf(holds []*hold) map[*core]bool {
	users := make(map[*core]bool)
	for _, h := range holds {
		users[h.p] = true
	}
	return users
}

// reportRenewal reports err, a failed renewal of the session of holds
// (those that rely on it, or did when it was retired), to their
// primitives: logged at level once per logger, naming their keys, and to
// each error handler.
func reportRenewal(holds []*hold, err error, level slog.Level) {
	keys := make(map[*slog.Logger][]string)
	for p := range usersOf(holds) {
		keys[p.cfg.logger] = append(keys[p.cfg.logger], p.key)
		if p.cfg.onError != nil {
			p.cfg.onError(err)
		}
	}
	for logger, ks := range keys {
		slices.Sort(ks)
		if len(ks) == 1 {
			logger.Log(context.Background(), level, "dsync", "key", ks[0], "err", err)
		} else {
			logger.Log(context.Background(), level, "dsync", "keys", slices.Compact(ks), "err", err)
		}
	}
}
