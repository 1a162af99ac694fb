package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKeepHistoriesOutlivesTheTest: a failed test's histories are copied
// where the testing package does not remove them (the soak's observer
// violation of 2026-11-28 could not be traced: its histories went with
// the test's temporary directory).
func TestKeepHistoriesOutlivesTheTest(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w1.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := keepHistories(t, dir)
	if kept == dir {
		t.Fatal("the histories were not copied")
	}
	defer os.RemoveAll(kept)
	if b, err := os.ReadFile(filepath.Join(kept, "w1.jsonl")); err != nil || string(b) != "{}\n" {
		t.Fatalf("kept copy: %q, %v", b, err)
	}
}
