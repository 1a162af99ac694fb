package statusread

import (
	"context"
	"strings"
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// TestMarkHoldsSkipsExpired: an expired claim is marked Expired and
// holds nothing, and the claims behind it hold by the grant rule as if it
// had ended: the first live writer holds, the readers behind it wait.
func TestMarkHoldsSkipsExpired(t *testing.T) {
	docs := []queue.Doc{
		{Epoch: 1, Mode: driver.Exclusive},
		{Epoch: 2, Mode: driver.Exclusive},
		{Epoch: 3, Mode: driver.Shared},
	}
	q := make([]clienthook.Claim, len(docs))
	markHolds(q, docs, []bool{true, false, false})
	want := []struct{ holds, expired bool }{{false, true}, {true, false}, {false, false}}
	for i, w := range want {
		if q[i].Holds != w.holds || q[i].Expired != w.expired {
			t.Errorf("claim @%d: Holds %v, Expired %v; want %v, %v", docs[i].Epoch, q[i].Holds, q[i].Expired, w.holds, w.expired)
		}
	}
}

// TestListRefusesNegativeLimit: a negative limit is an error before the
// directory is opened.
func TestListRefusesNegativeLimit(t *testing.T) {
	opened := false
	open := func() (driver.KeyDirectory, error) { opened = true; return nil, nil }
	read := func(context.Context, string) ([]clienthook.Claim, error) { return nil, nil }
	n := 0
	for _, err := range List(context.Background(), driver.KeyQuery{Limit: -1}, open, read) {
		n++
		if err == nil || !strings.Contains(err.Error(), "limit must not be negative") {
			t.Fatalf("err %v, want the negative limit refused", err)
		}
	}
	if n != 1 || opened {
		t.Fatalf("%d results, directory opened %v; want 1 error and no open", n, opened)
	}
}
