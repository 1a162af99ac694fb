package statusread_test

import (
	"testing"

	"github.com/go-dsync/dsync/internal/statusread"
	"github.com/go-dsync/dsync/leader/operator"
)

// KindOf tells each kind by its key's prefix; a namespaced Mutex's key,
// which no kind owns, is a mutex named by the whole key. KeysNamed gives
// a key of each kind.
func TestKindOf(t *testing.T) {
	for key, want := range map[string][2]string{
		"jobs":                {statusread.KindMutex, "jobs"},
		"dsync:rw/cfg":        {statusread.KindRWMutex, "cfg"},
		"dsync:sem/encode":    {statusread.KindSemaphore, "encode"},
		"dsync:once/migrate":  {statusread.KindOnce, "migrate"},
		operator.LockKey("b"): {statusread.KindElection, "b"},
		"dsync:team/jobs":     {statusread.KindMutex, "dsync:team/jobs"},
		"dsync:sem/":          {statusread.KindMutex, "dsync:sem/"},
	} {
		if kind, name := statusread.KindOf(key); kind != want[0] || name != want[1] {
			t.Errorf("KindOf(%q) = %s %q; want %s %q", key, kind, name, want[0], want[1])
		}
	}
	for _, key := range statusread.KeysNamed("x") {
		if _, name := statusread.KindOf(key); name != "x" {
			t.Errorf("KeysNamed(x) gives %q, which KindOf names %q", key, name)
		}
	}
}
