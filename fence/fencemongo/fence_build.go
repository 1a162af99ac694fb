package fencemongo

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Building a fenced request: the filter that admits only documents whose
// fence is at most the token, the update that raises it, and a document
// that carries it.

// filter is filter, restricted to documents whose fence is at most the
// token (or that have none yet), placeholders left out.
func (f *Fenced) filter(filter any) (bson.D, error) {
	if filter == nil {
		return nil, errors.New("fencemongo: Fenced: nil filter")
	}
	return bson.D{{Key: "$and", Value: bson.A{filter, bson.D{f.atMostToken()}, notPlaceholder}}}, nil
}

// atMostToken is the condition that a document's fence is at most the
// token, or that it has none.
func (f *Fenced) atMostToken() bson.E {
	return bson.E{Key: FenceField, Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$gt", Value: fenceLimit(f.token)}}}}}
}

// update is update with the fence raised to the token: an update document
// of operators, none of which may name FenceField.
func (f *Fenced) update(update any) (bson.D, error) {
	raw, err := marshalDoc(update)
	if err != nil {
		return nil, fmt.Errorf("fencemongo: Fenced: update: %w", err)
	}
	elems, err := raw.Elements()
	if err != nil {
		return nil, err
	}
	var out bson.D
	raised := false
	for _, e := range elems {
		op := e.Key()
		if len(op) == 0 || op[0] != '$' {
			return nil, fmt.Errorf("fencemongo: Fenced: update field %q is not an update operator (use ReplaceOne to replace a document)", op)
		}
		fields, ok := e.Value().DocumentOK()
		if !ok {
			return nil, fmt.Errorf("fencemongo: Fenced: update operator %s takes a document", op)
		}
		if err := ownFields(fields, "update"); err != nil {
			return nil, err
		}
		if op != "$max" {
			out = append(out, bson.E{Key: op, Value: fields})
			continue
		}
		var max bson.D
		if err := bson.Unmarshal(fields, &max); err != nil {
			return nil, err
		}
		out = append(out, bson.E{Key: "$max", Value: append(max, bson.E{Key: FenceField, Value: f.token})})
		raised = true
	}
	if !raised {
		out = append(out, bson.E{Key: "$max", Value: bson.D{{Key: FenceField, Value: f.token}}})
	}
	return out, nil
}

// withFence is doc with FenceField set to the token; doc must not have it.
func (f *Fenced) withFence(doc any) (bson.D, error) {
	raw, err := marshalDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("fencemongo: Fenced: %w", err)
	}
	if err := ownFields(raw, "document"); err != nil {
		return nil, err
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return append(d, bson.E{Key: FenceField, Value: f.token}), nil
}

// ownFields refuses a document (of what) that names the fields a Fenced
// keeps for itself.
func ownFields(doc bson.Raw, what string) error {
	if _, err := doc.LookupErr(FenceField); err == nil {
		return fmt.Errorf("fencemongo: Fenced: the %s sets %s, the fence", what, FenceField)
	}
	if _, err := doc.LookupErr(AbsentField); err == nil {
		return fmt.Errorf("fencemongo: Fenced: the %s sets %s, the mark of a placeholder", what, AbsentField)
	}
	return nil
}

// marshalDoc marshals a document given as any type the driver accepts.
func marshalDoc(v any) (bson.Raw, error) {
	switch d := v.(type) {
	case nil:
		return nil, errors.New("nil document")
	case bson.Raw:
		return d, nil
	}
	b, err := bson.Marshal(v)
	return bson.Raw(b), err
}
