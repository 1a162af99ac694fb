//go:build unix

package main

import (
	"context"
	"fmt"
	"github.com/go-dsync/dsync/leader/operator"
	"slices"
	"strings"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/statuspage"
)

// A drain record is kept whatever it names, and a member that is not
// there never reads it: a mistyped partition or member would be a drain
// that moves nothing, reported as done. So dsync drain first checks that
// there is something to drain, and otherwise says what is there.

// listedMax is how many names an error lists, at most.
const listedMax = 10

// drainTarget returns the ID of the member of partition that who names
// (its ID, or HOST:PID of its process): one of the members whose status
// was written within directiveSeen or, with undo, one that is drained
// (its status may be gone: the undrain clears it from dsync status).
// Otherwise it fails, naming what it did not find and what is there: the
// partition's members, or the partitions where the partition has none.
// where names the lock collection, for the latter.
func drainTarget(ctx context.Context, c *dsync.Client, ms membersAndDirectives, where, partition, who string, undo bool) (string, error) {
	members, ds, err := ms.MembersAndDirectives(ctx, partition, directiveSeen)
	if err != nil {
		return "", err
	}
	drained := operator.Drained(ds)
	if len(members) == 0 && (!undo || len(drained) == 0) {
		return "", noPartition(ctx, c, where, partition)
	}
	id, err := matchMember(members, partition, who)
	if err == nil && (slices.ContainsFunc(members, func(m leader.Member) bool { return m.ID == id }) || undo && drained[id]) {
		return id, nil
	}
	if err == nil {
		err = fmt.Errorf("no member %s of partition %q has written its status in the last %s", shownName(id), partition, fmtDur(directiveSeen))
	}
	return "", fmt.Errorf("%w; %s", err, memberList(members, drained, undo))
}

// memberList says which members there are: those seen, as "ID (HOST pid
// PID)", and with undo the drained ones too.
func memberList(members []leader.Member, drained map[string]bool, undo bool) string {
	var seen []string
	for _, m := range members {
		seen = append(seen, fmt.Sprintf("%s (%s pid %d)", shownName(m.ID), m.Host, m.PID))
	}
	out := "its members: " + listed(seen)
	if len(seen) == 0 {
		out = "it has no member now"
	}
	if undo && len(drained) > 0 {
		var ids []string
		for id := range drained {
			ids = append(ids, shownName(id))
		}
		slices.Sort(ids)
		out += "; drained: " + listed(ids)
	}
	return out
}

// noPartition is the error for a partition none of whose members has
// written its status within directiveSeen, naming the partitions whose
// shards' leases are in the lock collection.
func noPartition(ctx context.Context, c *dsync.Client, where, partition string) error {
	err := fmt.Errorf("no member of partition %q has written its status in the last %s", partition, fmtDur(directiveSeen))
	names, more, lerr := partitionNames(ctx, c)
	switch {
	case lerr != nil:
		return fmt.Errorf("%w (and listing the partitions failed: %v)", err, lerr)
	case len(names) == 0:
		return fmt.Errorf("%w; %s has no partition", err, where)
	case more:
		return fmt.Errorf("%w; partitions in %s: %s and more", err, where, strings.Join(names, ", "))
	}
	return fmt.Errorf("%w; partitions in %s: %s", err, where, strings.Join(names, ", "))
}

// partitionNames returns the names of the partitions whose shards the
// store lists (the first listedMax found, in order), and whether there
// are more. Only an error reads them: List reads each key's queue too.
func partitionNames(ctx context.Context, c *dsync.Client) (names []string, more bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prefix := operator.LockKey("")
	for ks, err := range statuspage.NewReader(c).List(ctx, statuspage.ListOptions{Prefix: prefix}) {
		if err != nil {
			return nil, false, err
		}
		name, _, ok := statuspage.ShardOf(strings.TrimPrefix(ks.Key, prefix))
		if !ok || slices.Contains(names, shownName(name)) {
			continue
		}
		if len(names) == listedMax {
			more = true
			break
		}
		names = append(names, shownName(name))
	}
	slices.Sort(names)
	return names, more, nil
}

// listed joins names, the first listedMax of them, saying how many more
// there are.
func listed(names []string) string {
	if len(names) <= listedMax {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:listedMax], ", ") + fmt.Sprintf(" and %d more", len(names)-listedMax)
}
