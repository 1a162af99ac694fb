package harness

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseCounts parses a comma-separated list of counts, the value of a
// flag such as -scale-keys; "none" is an empty list (a part of a
// scenario not run).
func ParseCounts(s string) ([]int, error) {
	if s == "none" {
		return []int{}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// SetCounts sets the options that are lists of counts from the values of
// the flags -renew-locks, -scale-keys and -scale-waiters ("": the
// default).
func (o *Options) SetCounts(renewLocks, scaleKeys, scaleWaiters string) error {
	for _, l := range []struct {
		flag, value string
		to          *[]int
	}{{"renew-locks", renewLocks, &o.RenewLocks}, {"scale-keys", scaleKeys, &o.ScaleKeys}, {"scale-waiters", scaleWaiters, &o.ScaleWaiters}} {
		if l.value == "" {
			continue
		}
		v, err := ParseCounts(l.value)
		if err != nil {
			return fmt.Errorf("-%s: %w", l.flag, err)
		}
		*l.to = v
	}
	return nil
}
