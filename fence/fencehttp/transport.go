package fencehttp

import (
	"net/http"

	"github.com/go-dsync/dsync/fence"
)

// Transport is the holder's side: an http.RoundTripper that carries Key and
// Token. It carries them with every request, in KeyHeader and TokenHeader.
// Make one per hold, with the hold's token (dsync.Mutex.Token,
// dsync.TokenOf, leader.Info.Token), and use it in an http.Client:
//
//	client := &http.Client{Transport: &fencehttp.Transport{Key: "visits", Token: mu.Token()}}
//
// RoundTrip does not interpret the response, as http.RoundTripper's
// contract asks; Stale tells a refusal of the service's Handler.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper

	// Key names the fenced resource, usually the lock's key.
	Key string

	// Token is the hold's token.
	Token uint64
}

// RoundTrip sends a copy of req that carries t's key and token.
// req itself is not modified. If the key or the token is one that no fence
// accepts (fence.Check: an empty key, token 0 from a lock not held), it
// sends nothing, closes req's body and returns that error.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := fence.Check(t.Key, t.Token); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header.Set(KeyHeader, escapeKey(t.Key))
	r.Header.Set(TokenHeader, formatToken(t.Token))
	return t.base().RoundTrip(r)
}

// CloseIdleConnections closes the idle connections of Base if it has such a
// method. So http.Client.CloseIdleConnections reaches it.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// Stale returns a *fence.StaleError if resp is a Handler's refusal of a
// stale token.
//
// The error matches fence.ErrStale. Such a refusal is status 409 Conflict
// with KeyHeader and TokenHeader, the refused key and token, and
// MarkHeader, when known, the token accepted first. It returns nil for any
// other response, a handler's own 409 included. It reads only resp's status
// and headers; the caller still closes resp.Body.
func Stale(resp *http.Response) error {
	if resp == nil || resp.StatusCode != http.StatusConflict {
		return nil
	}
	tv := resp.Header.Values(TokenHeader)
	kv := resp.Header.Values(KeyHeader)
	if len(tv) != 1 || len(kv) != 1 {
		return nil
	}
	token, err := parseToken(tv[0])
	if err != nil {
		return nil
	}
	key, err := unescapeKey(kv[0])
	if err != nil {
		return nil
	}
	e := &fence.StaleError{Key: key, Token: token}
	if mark, err := parseToken(resp.Header.Get(MarkHeader)); err == nil {
		e.Mark = mark
	}
	return e
}
