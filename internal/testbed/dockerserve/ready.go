package dockerserve

import (
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Hello is what readiness reads from a member's hello answer.
type Hello struct {
	IsWritablePrimary bool     `bson:"isWritablePrimary"`
	Secondary         bool     `bson:"secondary"`
	SetName           string   `bson:"setName"`
	Hosts             []string `bson:"hosts"`
	Msg               string   `bson:"msg"` // "isdbgrid" from a mongos
}

// Answer is one member's hello: the answer, or why there was none.
type Answer struct {
	Hello Hello
	Err   error
}

// ReplicaSetReady says whether rs is ready for the tests, from its
// members' hello answers (answers[i] is rs.Members[i]'s): nil once the
// first member is the writable primary of rs.ID and knows every member,
// and every other member is a secondary of that set (so a majority write
// can be acknowledged). Otherwise it says what is missing.
func ReplicaSetReady(rs ReplicaSet, answers []Answer) error {
	if len(answers) != len(rs.Members) {
		return fmt.Errorf("replica set %s: %d answers for %d members", rs.ID, len(answers), len(rs.Members))
	}
	for i, a := range answers {
		m := rs.Members[i]
		switch {
		case a.Err != nil:
			return fmt.Errorf("replica set %s: %s does not answer: %w", rs.ID, m.Name, a.Err)
		case a.Hello.SetName != rs.ID:
			return fmt.Errorf("replica set %s: %s is not a member yet (set name %q)", rs.ID, m.Name, a.Hello.SetName)
		case i == 0 && !a.Hello.IsWritablePrimary:
			return fmt.Errorf("replica set %s: %s is not the primary yet", rs.ID, m.Name)
		case i > 0 && !a.Hello.Secondary:
			return fmt.Errorf("replica set %s: %s is not a secondary yet", rs.ID, m.Name)
		}
	}
	primary := answers[0].Hello
	for _, m := range rs.Members {
		if !slices.Contains(primary.Hosts, m.Host()) {
			return fmt.Errorf("replica set %s: the primary does not list %s (hosts %v)", rs.ID, m.Host(), primary.Hosts)
		}
	}
	return nil
}

// RouterReady says whether a mongos is ready: it answers as a mongos, and
// listShards (whose shard names are listed) names every shard of the plan.
func RouterReady(p Plan, hello Answer, listed []string) error {
	switch {
	case hello.Err != nil:
		return fmt.Errorf("mongos does not answer: %w", hello.Err)
	case hello.Hello.Msg != "isdbgrid":
		return fmt.Errorf("%s does not answer as a mongos (msg %q)", p.Entry, hello.Hello.Msg)
	}
	for _, rs := range p.Shards() {
		if !slices.Contains(listed, rs.ID) {
			return fmt.Errorf("mongos does not list shard %s yet (listed %v)", rs.ID, listed)
		}
	}
	return nil
}

// alreadyInitialized is the server's code for a replSetInitiate on a set
// that has its configuration.
const alreadyInitialized = 23

// Initiated says whether a replSetInitiate's outcome leaves the set
// initiated: it succeeded, or an earlier try (whose answer was lost) did.
// Any other error is worth a retry: the member may not listen yet, or may
// not resolve the others' names yet.
func Initiated(err error) bool {
	if err == nil {
		return true
	}
	var ce mongo.CommandError
	return errors.As(err, &ce) && (ce.Code == alreadyInitialized || ce.Name == "AlreadyInitialized")
}
