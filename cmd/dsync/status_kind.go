//go:build unix

package main

import (
	"strings"

	"github.com/go-dsync/dsync/leader"
)

// What kind of primitive a stored key belongs to, and the name its user
// gave it. The library keeps each kind but the Mutex in a namespace of
// its own: a Semaphore "encode" claims the key "dsync:sem/encode", a
// Once "migrate-42" the key "dsync:once/migrate-42". Status shows the
// name and the kind, so that what a user made is found under the name
// the user gave it.

// The kinds status shows.
const (
	kindMutex     = "mutex"
	kindRWMutex   = "rwmutex"
	kindSemaphore = "semaphore"
	kindOnce      = "once"
	kindElection  = "election"
)

// namespaces are the key prefixes of the kinds that have one, in the
// order dsync status NAME shows them (after the Mutex, whose key is the
// name itself).
var namespaces = []struct{ prefix, kind string }{
	{"dsync:rw/", kindRWMutex},
	{"dsync:sem/", kindSemaphore},
	{"dsync:once/", kindOnce},
	{leader.LockKey(""), kindElection},
}

// primitiveOf returns the kind of the primitive that claims key, and the
// name it was made with. A Mutex made with dsync.WithNamespace claims
// "dsync:NS/NAME", which no kind owns: it is a mutex shown by its key as
// stored, since the name alone would not tell it from the plain one.
func primitiveOf(key string) (kind, name string) {
	for _, ns := range namespaces {
		if n, ok := strings.CutPrefix(key, ns.prefix); ok && n != "" {
			return ns.kind, n
		}
	}
	return kindMutex, key
}

// keysNamed returns the stored keys of every primitive that can be named
// name: the Mutex's and each namespaced kind's.
func keysNamed(name string) []string {
	keys := []string{name}
	for _, ns := range namespaces {
		keys = append(keys, ns.prefix+name)
	}
	return keys
}
