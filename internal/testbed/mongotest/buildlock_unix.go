//go:build unix

package mongotest

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockBuild serializes the ferretserver builds of test binaries that run
// at the same time (go test runs packages in parallel): on a cold build
// cache the first compiles FerretDB and SQLite, the others then only link,
// instead of all compiling the same packages at once. It returns the
// unlock function; on any error it does not lock.
func lockBuild() func() {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "dsync-mongotest-build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
