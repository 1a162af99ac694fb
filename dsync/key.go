package dsync

import (
	"fmt"
	"strings"

	"github.com/go-dsync/dsync/internal/clienthook"
)

// A primitive's key: as given, and as stored, in its namespace.

// reservedPrefix begins the keys of dsync's own namespaces (WithNamespace,
// clienthook.NamespacedKey): plain keys may not.
const reservedPrefix = "dsync:"

// storedKey is the key a primitive claims in its store.
func storedKey(key, namespace string) (string, error) {
	switch {
	case key == "":
		return "", ErrEmptyKey
	case namespace != "":
		return clienthook.NamespacedKey(namespace, key), nil
	case strings.HasPrefix(key, reservedPrefix):
		return "", fmt.Errorf("dsync: key %q: keys beginning with %q are reserved", key, reservedPrefix)
	}
	return key, nil
}

// dsync's own namespaces, in which its primitives other than Mutex keep
// their keys.
const (
	// rwNamespace is the namespace of RWMutex keys: "dsync:rw/KEY".
	rwNamespace = "rw"
	// semNamespace is the namespace of Semaphore keys: "dsync:sem/KEY".
	semNamespace = "sem"
	// onceNamespace is the namespace of Once keys: "dsync:once/KEY".
	onceNamespace = "once"
	// electionNamespace is package leader's namespace (operator.Namespace,
	// in leader/operator):
	// a Mutex in it is an election's lease, which an observer should not
	// count with the plain Mutexes of the same name. A test of package
	// leader keeps the two names equal.
	electionNamespace = "election"
	// sweepKey is the lock the sweeping Client holds, in dsync's
	// namespace.
	sweepKey = "sweep"
)

// ownNamespaces are dsync's own namespaces, each with whose keys it
// holds. WithNamespace refuses them; dsync and package leader put their
// Mutexes in them with ownNamespace.
var ownNamespaces = map[string]string{
	rwNamespace:       "the RWMutexes'",
	semNamespace:      "the Semaphores'",
	onceNamespace:     "the Onces'",
	electionNamespace: "package leader's election leases'",
	sweepKey:          "the compaction lock's", // the key sweep, in the namespace sweep
}
