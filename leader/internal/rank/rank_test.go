package rank

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.2.3", "1.2.3", 0},
		{"v1.2.3", "1.2.3", 0},
		{"1.10.0", "1.9.0", 1},
		{"1.2", "1.2.0", 0},
		{"2", "1.99.99", 1},
		{"1.2.3-rc.1", "1.2.3", -1},
		{"1.2.3-rc.2", "1.2.3-rc.10", -1},
		{"1.2.3-alpha", "1.2.3-1", 1},
		{"1.2.3-rc", "1.2.3-rc.1", -1},
		{"1.2.3+build.7", "1.2.3", 0},
		{"", "0.0.1", -1},
		{"banana", "0.0.0", -1},
		{"1..2", "0.1", -1},
		{"1.2-", "0.1", -1},
		{"banana", "", 0},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := CompareVersions(c.b, c.a); got != -c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}

func TestRuleCompare(t *testing.T) {
	byVersion := Rule{Versions: CompareVersions}
	if byVersion.Compare(Cand{"1.1", 0}, Cand{"1.0", 9}) != 1 {
		t.Error("a newer version ranks below a higher priority")
	}
	if byVersion.Compare(Cand{"1.1", 1}, Cand{"1.1", 2}) != -1 {
		t.Error("priority does not order one version")
	}
	if (Rule{}).Compare(Cand{"1.1", 0}, Cand{"1.0", 1}) != -1 {
		t.Error("versions count without a rule")
	}
	if (Rule{}).Newer("2", "1") {
		t.Error("Newer without a rule")
	}
}
