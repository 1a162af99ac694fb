package statuspage

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// membersAndDirectives is served by member stores that read an
// election's members and directives in one call (leadermongo's Store).
type membersAndDirectives interface {
	MembersAndDirectives(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, []operator.Directive, error)
}

// Drained returns the members of partition an operator drained
// (operator.Drain, dsync drain), as the drain directive of the highest
// generation says, ordered by ID: none when Reader.Members keeps no
// directives (operator.Directives). A member's Host and PID are its status's
// where it was written within Reader.Seen. It is one read (leadermongo's
// Store: one find of the members and the directives).
func (r *Reader) Drained(ctx context.Context, partition string) ([]DrainedMember, error) {
	var members []leader.Member
	var ds []operator.Directive
	var err error
	switch ms := r.Members.(type) {
	case membersAndDirectives:
		members, ds, err = ms.MembersAndDirectives(ctx, partition, r.Seen)
	case operator.Directives:
		if ds, err = ms.Directives(ctx, partition); err == nil && len(operator.Drained(ds)) > 0 {
			members, err = r.Members.Members(ctx, partition, r.Seen)
		}
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	latest := map[string]operator.Directive{}
	for _, d := range ds {
		if cur, ok := latest[d.Member]; d.Kind == operator.DirectiveDrain && (!ok || d.Gen > cur.Gen) {
			latest[d.Member] = d
		}
	}
	var out []DrainedMember
	for id := range operator.Drained(ds) {
		d := latest[id]
		dr := DrainedMember{ID: id, By: d.By, Reason: d.Reason, At: d.At}
		if i := slices.IndexFunc(members, func(m leader.Member) bool { return m.ID == id }); i >= 0 {
			dr.Host, dr.PID = members[i].Host, members[i].PID
		}
		out = append(out, dr)
	}
	slices.SortFunc(out, func(a, b DrainedMember) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
