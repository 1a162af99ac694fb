//go:build unix

package main

import (
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// maxTTL is the longest --ttl of lock, once and elect: the bucket span of
// a store dsync made, within which a hold must end. The commands check
// --ttl before connecting (checkArgs), with dsync's in-memory store, whose
// span this is; a program may give a new store a longer span, the commands
// cannot.
const maxTTL = 5 * time.Minute

// ttlError is err, the library's refusal of --ttl ttl, said in the
// command's terms when ttl is above maxTTL.
func ttlError(err error, ttl time.Duration) error {
	if ttl > maxTTL {
		return fmt.Errorf("--ttl %v is too long: at most %v", ttl, maxTTL)
	}
	return err
}

// checkArgs is the library's judgement of --ttl ttl and of what make
// makes on a Client of that lease (a Mutex of the command's name, say),
// before connecting: over an in-memory store.
func checkArgs(ttl time.Duration, make func(c *dsync.Client) error) error {
	c, err := dsync.NewClient(memory.New(), dsync.ClientWithTTL(ttl), dsync.ClientWithIdleAge(0))
	if err != nil {
		return ttlError(err, ttl)
	}
	defer c.Close()
	return make(c)
}
