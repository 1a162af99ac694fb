// Package rank orders an election's candidates for the steering options
// of package leader (WithPriority, WithVersionRule): a pure function of
// what the candidates report, so that every candidate computes the same
// order from the same statuses.
package rank

import (
	"strconv"
	"strings"
)

// A Cand is what a candidate reports that its rank depends on.
type Cand struct {
	Version  string
	Priority int
}

// A Rule ranks candidates: by version first (when Versions is set, by
// its order), then by priority.
type Rule struct {
	// Versions compares two versions as cmp.Compare does; nil: versions
	// do not count.
	Versions func(a, b string) int
}

// Compare returns +1 if a ranks above b, -1 if below, 0 if neither.
func (r Rule) Compare(a, b Cand) int {
	if r.Versions != nil {
		if c := sign(r.Versions(a.Version, b.Version)); c != 0 {
			return c
		}
	}
	switch {
	case a.Priority > b.Priority:
		return 1
	case a.Priority < b.Priority:
		return -1
	}
	return 0
}

// Newer reports whether version a is newer than b by the rule (false
// when versions do not count).
func (r Rule) Newer(a, b string) bool {
	return r.Versions != nil && r.Versions(a, b) > 0
}

func sign(c int) int {
	switch {
	case c > 0:
		return 1
	case c < 0:
		return -1
	}
	return 0
}

// CompareVersions compares two versions in the manner of semantic
// versioning: an optional "v", then dot-separated numeric fields (any
// number of them, missing ones count as 0), then an optional
// pre-release ("-rc.1", which ranks below the release) and build
// metadata ("+...", ignored). A version that does not parse ranks below
// every one that does; two that do not parse compare equal.
func CompareVersions(a, b string) int {
	pa, oka := parse(a)
	pb, okb := parse(b)
	switch {
	case !oka && !okb:
		return 0
	case !oka:
		return -1
	case !okb:
		return 1
	}
	for i := range max(len(pa.nums), len(pb.nums)) {
		x, y := at(pa.nums, i), at(pb.nums, i)
		switch {
		case x > y:
			return 1
		case x < y:
			return -1
		}
	}
	return comparePre(pa.pre, pb.pre)
}

type version struct {
	nums []uint64
	pre  []string // nil: a release
}

func at(nums []uint64, i int) uint64 {
	if i < len(nums) {
		return nums[i]
	}
	return 0
}

func parse(s string) (version, bool) {
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	var v version
	if i := strings.IndexByte(s, '-'); i >= 0 {
		if i == len(s)-1 {
			return version{}, false
		}
		v.pre = strings.Split(s[i+1:], ".")
		for _, p := range v.pre {
			if p == "" {
				return version{}, false
			}
		}
		s = s[:i]
	}
	if s == "" {
		return version{}, false
	}
	for f := range strings.SplitSeq(s, ".") {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil || f == "" || f[0] == '+' {
			return version{}, false
		}
		v.nums = append(v.nums, n)
	}
	return v, true
}

// comparePre compares pre-releases as semantic versioning does: none
// ranks above any; numeric fields compare as numbers, below
// alphanumeric ones; a shorter list below a longer one it begins.
func comparePre(a, b []string) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	for i := range min(len(a), len(b)) {
		x, errx := strconv.ParseUint(a[i], 10, 64)
		y, erry := strconv.ParseUint(b[i], 10, 64)
		switch {
		case errx == nil && erry == nil:
			switch {
			case x > y:
				return 1
			case x < y:
				return -1
			}
		case errx == nil:
			return -1
		case erry == nil:
			return 1
		default:
			if c := strings.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
	}
	return sign(len(a) - len(b))
}
