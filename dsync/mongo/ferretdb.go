package dsyncmongo

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ferretDBBackend is where a FerretDB server keeps its data.
type ferretDBBackend int

const (
	backendUnknown ferretDBBackend = iota
	backendSQLite
	backendPostgreSQL
)

// ferretBackend tells where the store's FerretDB keeps its data: FerretDB
// 2 in PostgreSQL; FerretDB 1 as the plan of a find by _id on the lock
// collection says, which it passes through from its backend. Unknown
// when the plan says neither (an empty plan, for a collection not yet
// made); an error when explain failed. The store's preparation lock is
// held.
func (p *platform) ferretBackend(ctx context.Context) (ferretDBBackend, error) {
	if p.ferretRelease == 2 {
		return backendPostgreSQL, nil
	}
	if err := p.cfg.fault("explain"); err != nil {
		return backendUnknown, err
	}
	raw, err := p.db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{
		{Key: "find", Value: p.cfg.collection},
		{Key: "filter", Value: bson.D{{Key: "_id", Value: "dsync"}}},
	}}}).Raw()
	if err != nil {
		return backendUnknown, err
	}
	planner, _ := raw.Lookup("queryPlanner").DocumentOK()
	return planBackend(planner), nil
}

// planBackend names the backend whose plan FerretDB 1 passed through in
// an explain's queryPlanner: SQLite's EXPLAIN QUERY PLAN, an array of
// lines, or PostgreSQL's JSON plan, a document.
func planBackend(queryPlanner bson.Raw) ferretDBBackend {
	plan := queryPlanner.Lookup("Plan")
	if _, ok := plan.DocumentOK(); ok {
		return backendPostgreSQL
	}
	if _, ok := plan.ArrayOK(); ok {
		return backendSQLite
	}
	return backendUnknown
}
