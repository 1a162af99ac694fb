package dsync

import (
	"fmt"
	"strings"
)

// A primitive's key: as given, and as stored, in its namespace.

// reservedPrefix begins the keys of dsync's own namespaces (WithNamespace):
// plain keys may not.
const reservedPrefix = "dsync:"

// NamespacedKey is key, in namespace ns (WithNamespace), as it is stored:
// the key Client.Queue and Client.List show for it. Package leader's
// election NAME is NamespacedKey("election", NAME).
func NamespacedKey(ns, key string) string { return reservedPrefix + ns + "/" + key }

// storedKey is the key a primitive claims in its store.
func storedKey(key, namespace string) (string, error) {
	switch {
	case key == "":
		return "", ErrEmptyKey
	case namespace != "":
		return NamespacedKey(namespace, key), nil
	case strings.HasPrefix(key, reservedPrefix):
		return "", fmt.Errorf("dsync: key %q: keys beginning with %q are reserved", key, reservedPrefix)
	}
	return key, nil
}
