//go:build unix

package serverproc

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// Credential returns whom a server that refuses to run as root runs as:
// nil (the current user) unless this process runs as root; as root, the
// first of users that exists and is not root, with its primary group and
// no supplementary groups. When none is, the error says why the last was
// not.
func Credential(users ...string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	err := errors.New("no user given")
	for _, name := range users {
		u, lerr := user.Lookup(name)
		if lerr != nil {
			err = lerr
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			err = fmt.Errorf("user %s cannot run a server (uid %s, gid %s)", name, u.Uid, u.Gid)
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, err
}

// MkdirTemp makes a new temporary directory, as [os.MkdirTemp] does,
// owned by cred's user and group when cred is not nil.
func MkdirTemp(prefix string, cred *syscall.Credential) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil || cred == nil {
		return dir, err
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
