package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/relock"
)

// Locking again right after a takeover: a primitive's exclusive claim (a
// Mutex's, a writer's, a Once's, an election's) that locks again less
// than the poll interval after it took the key over from another owner's
// release first lets that owner claim again, so that processes locking in
// a loop take turns in a strict rotation. dsync/internal/relock says why
// and how; here are the reads and waits it makes, on p's key.

// tookOver records how p's exclusive claim of epoch came to hold: after
// the release of after's claim ("" when nothing ended just below it).
func (p *core) tookOver(epoch uint64, after string) {
	p.relock.TookOver(epoch, after, p.owner, p.client.mono())
}

// afterPredecessor lets the owner that p last took its key over from
// claim first, if that was less than the relock window ago.
func (p *core) afterPredecessor(ctx context.Context) {
	t, ok := p.relock.Last()
	if !ok {
		return
	}
	c := p.client
	relock.AfterPredecessor(ctx, t, relock.Env{
		Mono:   c.mono,
		Window: relockWindow(&c.cfg),
		ReadOwner: func(ctx context.Context, epoch uint64) (string, bool, error) {
			d, found, err := c.eng.ReadClaim(ctx, p.stored, epoch)
			return d.Owner, found, err
		},
		AwaitClaim: func(ctx context.Context, epoch uint64, d time.Duration) bool {
			return c.wake.AwaitClaim(ctx, p.stored, epoch, d)
		},
	})
}

// relockWindow is how long after a takeover a Mutex that locks again waits
// for the owner it took over from: the poll interval, unless a test set
// it.
func relockWindow(cfg *clientConfig) time.Duration {
	if cfg.test.relockWindow > 0 {
		return cfg.test.relockWindow
	}
	return cfg.poll
}
