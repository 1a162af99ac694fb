package dsync

import (
	"strings"
	"testing"
)

// resolvedKey is a primitive's key as given: its namespace (empty: none),
// whether the namespace is one of dsync's own, and the key.
type resolvedKey struct {
	ns, key string
	own     bool
}

// stored resolves k the way a primitive does (WithNamespace, or
// ownNamespace for dsync's own), and returns its stored key, or ok false
// if the options or the key are refused.
func (k resolvedKey) stored() (string, bool) {
	c := config{prim: primMutex}
	switch {
	case k.own:
		if ownNamespace(k.ns)(&c) != nil {
			return "", false
		}
	case k.ns != "":
		if WithNamespace(k.ns)(&c) != nil {
			return "", false
		}
	}
	s, err := storedKey(k.key, c.namespace)
	return s, err == nil
}

// FuzzStoredKey: two keys that the options accept are stored under one
// key only if they are the same key in the same namespace, both a user's
// or both dsync's own. A Mutex "a"
// in namespace "rw" of a user's must never share its queue with the
// RWMutex "a", nor a plain key with a namespaced one, whatever the keys
// and namespaces hold. The stored key also gives its parts back: the
// namespace ends at the first "/" after the reserved prefix.
func FuzzStoredKey(f *testing.F) {
	f.Add("", "a", false, "rw", "a", true)
	f.Add("rw", "a", false, "rw", "a", true)
	f.Add("", "dsync:rw/a", false, "rw", "a", true)
	f.Add("a", "b/c", false, "a/b", "c", false)
	f.Add("x", "y", false, "x", "y", false)
	f.Add("sweep", "sweep", true, "", "sweep", false)
	f.Fuzz(func(t *testing.T, ns1, key1 string, own1 bool, ns2, key2 string, own2 bool) {
		a, b := resolvedKey{ns1, key1, own1}, resolvedKey{ns2, key2, own2}
		sa, okA := a.stored()
		sb, okB := b.stored()
		for _, r := range []struct {
			k  resolvedKey
			s  string
			ok bool
		}{{a, sa, okA}, {b, sb, okB}} {
			if !r.ok {
				continue
			}
			ns, key, namespaced := parseStored(r.s)
			if namespaced != (r.k.ns != "") || ns != r.k.ns || key != r.k.key {
				t.Fatalf("%+v stored as %q, which reads back as namespace %q key %q", r.k, r.s, ns, key)
			}
		}
		if okA && okB && sa == sb && a != b {
			t.Fatalf("%+v and %+v are both stored as %q", a, b, sa)
		}
	})
}

// parseStored inverts storedKey.
func parseStored(s string) (ns, key string, namespaced bool) {
	rest, ok := strings.CutPrefix(s, reservedPrefix)
	if !ok {
		return "", s, false
	}
	ns, key, _ = strings.Cut(rest, "/")
	return ns, key, true
}
