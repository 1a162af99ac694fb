//go:build linux

package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ProbeCommits gives the flock driver a floor: each connection creates
// one small file at a time and syncs it, a durable write of the kernel's
// file system.
func (d flockDriver) ProbeCommits(ctx context.Context, ns string, conns int, dur time.Duration) (int, []float64, error) {
	dir := filepath.Join(d.dir, "floor_"+ns)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, nil, err
	}
	defer os.RemoveAll(dir)
	until := time.Now().Add(dur)
	var (
		mu    sync.Mutex
		lat   []float64
		first error
		wg    sync.WaitGroup
	)
	for c := range conns {
		wg.Go(func() {
			for seq := 0; time.Now().Before(until) && ctx.Err() == nil; seq++ {
				a := time.Now()
				err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d@%d", c, seq)), []byte("claim"), 0o600)
				if err == nil {
					var f *os.File
					if f, err = os.Open(filepath.Join(dir, fmt.Sprintf("%d@%d", c, seq))); err == nil {
						err = f.Sync()
						f.Close()
					}
				}
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil && !time.Now().After(until) {
					lat = append(lat, float64(time.Since(a))/1e6)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return len(lat), lat, first
}
