package fencehttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencehttp"
)

// roundTripper is an http.RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// serve is a RoundTripper that answers with h in this goroutine, as a
// server would: no network.
func serve(h http.Handler) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		resp := rec.Result()
		resp.Request = r
		return resp, nil
	})
}

// body is a request body that counts its reads and its Close.
type body struct {
	io.Reader
	reads, closes int
}

func (b *body) Read(p []byte) (int, error) { b.reads++; return b.Reader.Read(p) }
func (b *body) Close() error               { b.closes++; return nil }

func TestTransportSetsHeadersOnACopy(t *testing.T) {
	for _, tc := range []struct {
		name, key, wire string
	}{
		{"plain key", "orders/42", "orders/42"},
		{"key escaped", "a b%\nc\u00e9", "a%20b%25%0Ac%C3%A9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent *http.Request
			tr := &fencehttp.Transport{
				Base: roundTripper(func(r *http.Request) (*http.Response, error) {
					sent = r
					return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
				}),
				Key:   tc.key,
				Token: 7,
			}
			req := httptest.NewRequest(http.MethodPut, "http://svc/x", strings.NewReader("v"))
			req.Header.Set("X-Caller", "kept")
			req.Header.Set(fencehttp.TokenHeader, "1") // the Transport's own wins
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d, want the base's 204", resp.StatusCode)
			}
			if sent == req {
				t.Fatal("the caller's request was sent, not a copy")
			}
			if got := sent.Header.Get(fencehttp.KeyHeader); got != tc.wire {
				t.Errorf("%s = %q, want %q", fencehttp.KeyHeader, got, tc.wire)
			}
			if got := sent.Header.Get(fencehttp.TokenHeader); got != "7" {
				t.Errorf("%s = %q, want 7", fencehttp.TokenHeader, got)
			}
			if got := sent.Header.Get("X-Caller"); got != "kept" {
				t.Errorf("the caller's header X-Caller = %q on the copy", got)
			}
			if req.Header.Get(fencehttp.KeyHeader) != "" || req.Header.Get(fencehttp.TokenHeader) != "1" {
				t.Errorf("the caller's request was modified: %v", req.Header)
			}
			if sent.Body != req.Body {
				t.Error("the copy does not send the caller's body")
			}
		})
	}
}

func TestTransportNilHeader(t *testing.T) {
	var sent *http.Request
	tr := &fencehttp.Transport{
		Base: roundTripper(func(r *http.Request) (*http.Response, error) {
			sent = r
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
		}),
		Key: "k", Token: 1,
	}
	req := httptest.NewRequest(http.MethodGet, "http://svc/", nil)
	req.Header = nil
	if _, err := tr.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if req.Header != nil || sent.Header.Get(fencehttp.TokenHeader) != "1" {
		t.Fatalf("caller's header %v, sent %v", req.Header, sent.Header)
	}
}

func TestTransportRefusesBadInputUnsent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   string
		token uint64
		want  error
	}{
		{"empty key", "", 1, fence.ErrBadKey},
		{"long key", strings.Repeat("k", fence.MaxKeyLen+1), 1, fence.ErrBadKey},
		{"token 0", "k", 0, fence.ErrBadToken},
		{"token above MaxToken", "k", fence.MaxToken + 1, fence.ErrBadToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &fencehttp.Transport{
				Base: roundTripper(func(r *http.Request) (*http.Response, error) {
					t.Error("a request was sent")
					return nil, errors.New("sent")
				}),
				Key: tc.key, Token: tc.token,
			}
			b := &body{Reader: strings.NewReader("v")}
			req := httptest.NewRequest(http.MethodPut, "http://svc/", b)
			resp, err := tr.RoundTrip(req)
			if !errors.Is(err, tc.want) || resp != nil {
				t.Fatalf("RoundTrip = %v, %v; want nil, %v", resp, err, tc.want)
			}
			if b.closes != 1 {
				t.Fatalf("body closed %d times, want once", b.closes)
			}
		})
	}
}

// TestStaleRoundTrip: a refusal made by Handler, carried back through
// Transport, is read by Stale as the StaleError that the store gave.
func TestStaleRoundTrip(t *testing.T) {
	var marks fence.Memory
	wrote := 0
	h := fencehttp.Handler(&marks, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wrote++
		w.WriteHeader(http.StatusConflict) // the handler's own 409: not a refusal
	}))
	key := "a b\u00e9" // escaped on the way there and back
	send := func(token uint64) *http.Response {
		t.Helper()
		c := &http.Client{Transport: &fencehttp.Transport{Base: serve(h), Key: key, Token: token}}
		resp, err := c.Get("http://svc/")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if err := fencehttp.Stale(send(5)); err != nil {
		t.Fatalf("Stale of the handler's own 409 = %v, want nil", err)
	}
	resp := send(3)
	err := fencehttp.Stale(resp)
	var se *fence.StaleError
	if !errors.Is(err, fence.ErrStale) || !errors.As(err, &se) {
		t.Fatalf("Stale = %v, want a *fence.StaleError", err)
	}
	if want := (fence.StaleError{Key: key, Token: 3, Mark: 5}); *se != want {
		t.Fatalf("Stale = %+v, want %+v", *se, want)
	}
	if wrote != 1 {
		t.Fatalf("the handler ran %d times, want once (not for the stale token)", wrote)
	}
	if err := fencehttp.Stale(nil); err != nil {
		t.Fatalf("Stale(nil) = %v", err)
	}
}

func TestStaleOtherResponses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
	}{
		{"200 with the headers", http.StatusOK, http.Header{fencehttp.KeyHeader: {"k"}, fencehttp.TokenHeader: {"1"}}},
		{"409 without the token", http.StatusConflict, http.Header{fencehttp.KeyHeader: {"k"}}},
		{"409 with a bad token", http.StatusConflict, http.Header{fencehttp.KeyHeader: {"k"}, fencehttp.TokenHeader: {"x"}}},
		{"409 with a bad key", http.StatusConflict, http.Header{fencehttp.KeyHeader: {"%zz"}, fencehttp.TokenHeader: {"1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := fencehttp.Stale(&http.Response{StatusCode: tc.status, Header: tc.header}); err != nil {
				t.Fatalf("Stale = %v, want nil", err)
			}
		})
	}
}

func TestTransportCloseIdleConnections(t *testing.T) {
	closed := 0
	base := &idleCloser{RoundTripper: serve(http.NotFoundHandler()), closed: &closed}
	c := &http.Client{Transport: &fencehttp.Transport{Base: base, Key: "k", Token: 1}}
	c.CloseIdleConnections()
	if closed != 1 {
		t.Fatalf("Base's CloseIdleConnections called %d times, want once", closed)
	}
	(&fencehttp.Transport{Base: serve(http.NotFoundHandler())}).CloseIdleConnections() // a Base without it
}

type idleCloser struct {
	http.RoundTripper
	closed *int
}

func (c *idleCloser) CloseIdleConnections() { *c.closed++ }
