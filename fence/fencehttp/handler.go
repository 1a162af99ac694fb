package fencehttp

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-dsync/dsync/fence"
)

// Handler wraps next in the service's side, which admits each request
// through marks first.
//
// The handler it returns admits each request through marks before next
// runs, and ends the admission when next returns. A request is answered,
// without running next and without reading its body, with:
//
//   - 428 Precondition Required if KeyHeader or TokenHeader is missing;
//   - 400 Bad Request if either is malformed, repeated, or out of
//     fence.Check's bounds;
//   - 409 Conflict if the token is stale (marks.Admit's error matches
//     fence.ErrStale): the response carries the refused key and token
//     back in KeyHeader and TokenHeader, the mark in MarkHeader when
//     marks told it, and a plain-text body that says the token is stale
//     and which token was accepted first; Stale reads it on the holder's
//     side;
//   - 503 Service Unavailable if marks failed otherwise (its store is
//     unreachable, or the request's context ended while it waited for
//     the key): nothing is known of the mark, so nothing is written. The
//     body carries marks' error.
//
// Otherwise next runs with a context that Token reads, and nothing else
// of the request changed. Every method is fenced, GET and HEAD too: a
// holder shows its token before it reads what it will write from.
//
// The admission lasts while next runs: every other request of the key
// waits for it (in marks.Admit, bounded by that request's context), and
// it ends when next returns or panics. Writes that next leaves to a
// goroutine, a queue or a hijacked connection after it returns are not
// fenced. A handler that, admitted for a key, waits for another request
// of the same key deadlocks until that request's context ends.
//
// Handler panics if marks is nil.
func Handler(marks fence.Marks, next http.Handler) http.Handler {
	if marks == nil {
		panic(errNoMarks)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, token, code, msg := admission(r.Header)
		if code != 0 {
			http.Error(w, msg, code)
			return
		}
		release, err := marks.Admit(r.Context(), key, token)
		if err != nil {
			refuse(w, key, token, err)
			return
		}
		defer release()
		ctx := context.WithValue(r.Context(), admittedKey{}, admitted{key, token})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Token returns the key and the token that Handler admitted the request
// of ctx under.
//
// ctx is the request's context, or one made from it. ok is false outside
// Handler. A handler checks that the key covers what it writes:
// the key is the client's claim, and the fence holds only for writes to
// the resource the key names.
func Token(ctx context.Context) (key string, token uint64, ok bool) {
	a, ok := ctx.Value(admittedKey{}).(admitted)
	return a.key, a.token, ok
}

// errNoMarks is Handler's panic for a nil Marks: a service that would
// run every handler unfenced.
var errNoMarks = errors.New("fencehttp: Handler needs a fence.Marks")

type admittedKey struct{}

type admitted struct {
	key   string
	token uint64
}

// admission reads the key and the token of a request, or the status and
// the message of its refusal.
func admission(h http.Header) (key string, token uint64, code int, msg string) {
	kv, tv := h.Values(KeyHeader), h.Values(TokenHeader)
	switch {
	case len(kv) == 0 && len(tv) == 0:
		return "", 0, http.StatusPreconditionRequired, "fencehttp: a fenced request carries " + KeyHeader + " and " + TokenHeader
	case len(kv) == 0:
		return "", 0, http.StatusPreconditionRequired, "fencehttp: " + KeyHeader + " is missing"
	case len(tv) == 0:
		return "", 0, http.StatusPreconditionRequired, "fencehttp: " + TokenHeader + " is missing"
	case len(kv) > 1:
		return "", 0, http.StatusBadRequest, "fencehttp: " + KeyHeader + " is repeated"
	case len(tv) > 1:
		return "", 0, http.StatusBadRequest, "fencehttp: " + TokenHeader + " is repeated"
	}
	key, err := unescapeKey(kv[0])
	if err != nil {
		return "", 0, http.StatusBadRequest, "fencehttp: " + KeyHeader + ": bad percent-encoding"
	}
	token, err = parseToken(tv[0])
	if err != nil {
		return "", 0, http.StatusBadRequest, "fencehttp: " + TokenHeader + " is not a decimal token"
	}
	if err := fence.Check(key, token); err != nil {
		return "", 0, http.StatusBadRequest, err.Error()
	}
	return key, token, 0, ""
}

// refuse answers a request that marks did not admit.
func refuse(w http.ResponseWriter, key string, token uint64, err error) {
	stale := &fence.StaleError{Key: key, Token: token}
	var se *fence.StaleError
	switch {
	case errors.As(err, &se):
		stale.Mark = se.Mark
	case errors.Is(err, fence.ErrStale):
	case errors.Is(err, fence.ErrBadKey), errors.Is(err, fence.ErrBadToken):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	default:
		http.Error(w, "fencehttp: the mark store failed: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	h := w.Header()
	h.Set(KeyHeader, escapeKey(key))
	h.Set(TokenHeader, formatToken(token))
	if stale.Mark != 0 {
		h.Set(MarkHeader, formatToken(stale.Mark))
	}
	http.Error(w, stale.Error(), http.StatusConflict)
}
