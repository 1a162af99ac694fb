package statuspage

import (
	"github.com/go-dsync/dsync/leader/operator"
	"strings"

	"github.com/go-dsync/dsync/internal/clienthook"
)

// What kind of primitive a stored key belongs to, and the name its user
// gave it. The library keeps each kind but the Mutex in a namespace of
// its own: a Semaphore "encode" claims the key "dsync:sem/encode", a
// Once "migrate-42" the key "dsync:once/migrate-42". The readers show the
// name and the kind, so that what a user made is found under the name
// the user gave it.

// The kinds of primitive, as dsync status and the page name them.
const (
	KindMutex     = "mutex"
	KindRWMutex   = "rwmutex"
	KindSemaphore = "semaphore"
	KindOnce      = "once"
	KindElection  = "election"
)

// namespaces are the key prefixes of the kinds that have one, in the
// order Reader.WalkNamed reads them (after the Mutex, whose key is the name
// itself).
var namespaces = []struct{ prefix, kind string }{
	{"dsync:rw/", KindRWMutex},
	{"dsync:sem/", KindSemaphore},
	{"dsync:once/", KindOnce},
	{operator.LockKey(""), KindElection},
}

// KindOf returns the kind of the primitive that claims key, and the name
// it was made with. A Mutex made with dsync.WithNamespace claims
// "dsync:NS/NAME", which no kind owns: it is a mutex named by its key as
// stored, since the name alone would not tell it from the plain one.
func KindOf(key string) (kind, name string) {
	for _, ns := range namespaces {
		if n, ok := strings.CutPrefix(key, ns.prefix); ok && n != "" {
			return ns.kind, n
		}
	}
	return KindMutex, key
}

// KeysNamed returns the stored keys of every primitive that can be named
// name: the Mutex's, then each namespaced kind's.
func KeysNamed(name string) []string {
	keys := []string{name}
	for _, ns := range namespaces {
		keys = append(keys, ns.prefix+name)
	}
	return keys
}

// NamespacedKey is key in namespace ns (dsync.WithNamespace), as it is
// stored and as Reader's reads show it: "dsync:NS/KEY". Package leader's
// election NAME is NamespacedKey(leader.Namespace, NAME).
func NamespacedKey(ns, key string) string { return clienthook.NamespacedKey(ns, key) }
