package harness

import (
	"slices"
	"testing"
)

func TestSetCounts(t *testing.T) {
	var o Options
	if err := o.SetCounts("", "100, 1000", "none"); err != nil {
		t.Fatal(err)
	}
	if o.RenewLocks != nil || !slices.Equal(o.ScaleKeys, []int{100, 1000}) || o.ScaleWaiters == nil || len(o.ScaleWaiters) != 0 {
		t.Errorf("SetCounts(\"\", \"100, 1000\", \"none\") = %v, %v, %v; want the default, [100 1000], an empty list", o.RenewLocks, o.ScaleKeys, o.ScaleWaiters)
	}
	if err := o.SetCounts("1,x", "", ""); err == nil || err.Error()[:13] != "-renew-locks:" {
		t.Errorf("SetCounts of a bad list = %v; want an error naming -renew-locks", err)
	}
}
