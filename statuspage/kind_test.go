package statuspage_test

import (
	"github.com/go-dsync/dsync/leader/operator"
	"testing"

	"github.com/go-dsync/dsync/statuspage"
)

// KindOf tells each kind by its key's prefix; a namespaced Mutex's key,
// which no kind owns, is a mutex named by the whole key. KeysNamed gives
// a key of each kind.
func TestKindOf(t *testing.T) {
	for key, want := range map[string][2]string{
		"jobs":                {statuspage.KindMutex, "jobs"},
		"dsync:rw/cfg":        {statuspage.KindRWMutex, "cfg"},
		"dsync:sem/encode":    {statuspage.KindSemaphore, "encode"},
		"dsync:once/migrate":  {statuspage.KindOnce, "migrate"},
		operator.LockKey("b"): {statuspage.KindElection, "b"},
		"dsync:team/jobs":     {statuspage.KindMutex, "dsync:team/jobs"},
		"dsync:sem/":          {statuspage.KindMutex, "dsync:sem/"},
	} {
		if kind, name := statuspage.KindOf(key); kind != want[0] || name != want[1] {
			t.Errorf("KindOf(%q) = %s %q; want %s %q", key, kind, name, want[0], want[1])
		}
	}
	for _, key := range statuspage.KeysNamed("x") {
		if _, name := statuspage.KindOf(key); name != "x" {
			t.Errorf("KeysNamed(x) gives %q, which KindOf names %q", key, name)
		}
	}
}
