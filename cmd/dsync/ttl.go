//go:build unix

package main

import (
	"fmt"
	"time"
)

// maxTTL is the longest --ttl of lock, once and elect: the bucket span of
// a store dsync made, within which a hold must end. The commands check
// --ttl before connecting, with dsync's in-memory backend, whose span
// this is; a program may give a new store a longer span, the commands
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
