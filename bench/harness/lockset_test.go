//go:build linux

package harness

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// flockToken is the fencing token of a hold of the flock of f: a
// counter kept in the file, incremented under the lock.
func flockToken(f *os.File) (uint64, error) {
	var b [8]byte
	if _, err := f.ReadAt(b[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	t := binary.BigEndian.Uint64(b[:]) + 1
	binary.BigEndian.PutUint64(b[:], t)
	_, err := f.WriteAt(b[:], 0)
	return t, err
}

// LockSet takes the flocks of keys in their order, each with its token,
// on files opened for the set and closed (unlocked) by its release.
func (c flockConn) LockSet(_ context.Context, keys []string, _ time.Duration) ([]uint64, func(context.Context) error, error) {
	var files []*os.File
	release := func(context.Context) error {
		var errs []error
		for _, f := range slices.Backward(files) {
			errs = append(errs, f.Close())
		}
		return errors.Join(errs...)
	}
	tokenOf := map[string]uint64{}
	for _, k := range slices.Sorted(slices.Values(keys)) {
		f, err := os.OpenFile(filepath.Join(c.dir, "set-"+k), os.O_CREATE|os.O_RDWR, 0o600)
		if err == nil {
			files = append(files, f)
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		}
		if err == nil {
			tokenOf[k], err = flockToken(f)
		}
		if err != nil {
			return nil, nil, errors.Join(err, release(nil))
		}
	}
	tokens := make([]uint64, len(keys))
	for i, k := range keys {
		tokens[i] = tokenOf[k]
	}
	return tokens, release, nil
}

// TestCheckSetHolds: holds of a key that overlap, and tokens that do not
// rise with the holds' order, are counted key by key; holds of distinct
// keys at once, and holds that touch, are not.
func TestCheckSetHolds(t *testing.T) {
	hold := func(acq, rel int64, kt ...int) setHold {
		h := setHold{called: acq - 1, acquired: acq, released: rel}
		for i := 0; i+1 < len(kt); i += 2 {
			h.keys, h.tokens = append(h.keys, kt[i]), append(h.tokens, uint64(kt[i+1]))
		}
		return h
	}
	for _, c := range []struct {
		name              string
		holds             []setHold
		overlaps, belowTk int
	}{
		{"in turn", []setHold{hold(10, 20, 0, 1, 1, 1), hold(20, 30, 0, 2), hold(25, 40, 1, 2, 2, 1)}, 0, 0},
		{"two holders of key 0", []setHold{hold(10, 20, 0, 1), hold(15, 30, 0, 2, 1, 1)}, 1, 0},
		{"a hold inside a longer one", []setHold{hold(10, 50, 0, 1), hold(20, 30, 0, 2), hold(40, 60, 0, 3)}, 2, 0},
		{"token not above", []setHold{hold(10, 20, 3, 5), hold(30, 40, 3, 5), hold(50, 60, 3, 4)}, 0, 2},
		{"reported out of order", []setHold{hold(30, 40, 0, 2), hold(10, 20, 0, 1)}, 0, 0},
	} {
		o, b := checkSetHolds(c.holds)
		if o != c.overlaps || b != c.belowTk {
			t.Errorf("%s: %d overlaps, %d tokens not above; want %d, %d", c.name, o, b, c.overlaps, c.belowTk)
		}
	}
}

// checkLockSetFigure fails t if f, a figure of the lockset scenario run
// with sizes o, shows a violation, or not every set held.
func checkLockSetFigure(t *testing.T, f Figure, o Options) {
	t.Helper()
	switch {
	case strings.HasSuffix(f.Metric, "(must be 0)") && *f.Value != 0:
		t.Errorf("%s: %v", f.Key(), *f.Value)
	case f.Metric == "sets held, all runs" && *f.Value != float64(o.LockSetSets):
		t.Errorf("%s: %v, want %d", f.Key(), *f.Value, o.LockSetSets)
	}
}
