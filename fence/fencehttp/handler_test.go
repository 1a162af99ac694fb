package fencehttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencehttp"
)

// marksFunc is a fence.Marks made of a function.
type marksFunc func(ctx context.Context, key string, token uint64) (func(), error)

func (f marksFunc) Admit(ctx context.Context, key string, token uint64) (func(), error) {
	return f(ctx, key, token)
}

// request is a request to a fenced service, with the headers given
// (name, value pairs; a name twice is a repeated header) and a body that
// counts its reads.
func request(method string, b *body, headers ...string) *http.Request {
	r := httptest.NewRequest(method, "http://svc/x", b)
	for i := 0; i < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

func TestHandlerStatus(t *testing.T) {
	const k, tk = fencehttp.KeyHeader, fencehttp.TokenHeader
	stale := marksFunc(func(ctx context.Context, key string, token uint64) (func(), error) {
		return nil, &fence.StaleError{Key: key, Token: token, Mark: 9}
	})
	staleNoMark := marksFunc(func(ctx context.Context, key string, token uint64) (func(), error) {
		return nil, fmt.Errorf("store says: %w", fence.ErrStale)
	})
	down := marksFunc(func(ctx context.Context, key string, token uint64) (func(), error) {
		return nil, errors.New("dial tcp: connection refused")
	})
	narrow := marksFunc(func(ctx context.Context, key string, token uint64) (func(), error) {
		return nil, fmt.Errorf("%w: this store keeps keys of 8 bytes", fence.ErrBadKey)
	})
	for _, tc := range []struct {
		name    string
		marks   fence.Marks // nil: a fence.Memory
		method  string
		headers []string
		status  int
		body    string // a part of the body's text
		mark    string // MarkHeader of a 409
	}{
		{"no headers", nil, "PUT", nil, 428, k + " and " + tk, ""},
		{"GET without headers", nil, "GET", nil, 428, k + " and " + tk, ""},
		{"HEAD without headers", nil, "HEAD", nil, 428, "", ""},
		{"no token", nil, "PUT", []string{k, "a"}, 428, tk + " is missing", ""},
		{"no key", nil, "PUT", []string{tk, "1"}, 428, k + " is missing", ""},
		{"empty key", nil, "PUT", []string{k, "", tk, "1"}, 400, "a key is 1 to 512 bytes", ""},
		{"key too long", nil, "PUT", []string{k, strings.Repeat("k", 513), tk, "1"}, 400, "a key is 1 to 512 bytes", ""},
		{"bad escape", nil, "PUT", []string{k, "a%zz", tk, "1"}, 400, "percent-encoding", ""},
		{"token 0", nil, "PUT", []string{k, "a", tk, "0"}, 400, "is the lock held?", ""},
		{"token above MaxToken", nil, "PUT", []string{k, "a", tk, "9223372036854775808"}, 400, "a token is 1 to 2^63-1", ""},
		{"token not decimal", nil, "PUT", []string{k, "a", tk, "0x10"}, 400, "not a decimal token", ""},
		{"token signed", nil, "PUT", []string{k, "a", tk, "+1"}, 400, "not a decimal token", ""},
		{"key twice", nil, "PUT", []string{k, "a", k, "b", tk, "1"}, 400, k + " is repeated", ""},
		{"token twice", nil, "PUT", []string{k, "a", tk, "1", tk, "2"}, 400, tk + " is repeated", ""},
		{"stale", stale, "PUT", []string{k, "a", tk, "3"}, 409, `fence: stale token 3 for key "a": token 9 was accepted first`, "9"},
		{"stale GET", stale, "GET", []string{k, "a", tk, "3"}, 409, "token 9 was accepted first", "9"},
		{"stale, mark untold", staleNoMark, "PUT", []string{k, "a", tk, "3"}, 409, `fence: stale token 3 for key "a": a later token was accepted first`, ""},
		{"store down", down, "PUT", []string{k, "a", tk, "3"}, 503, "the mark store failed: dial tcp: connection refused", ""},
		{"store refuses the key", narrow, "PUT", []string{k, "a", tk, "3"}, 400, "keys of 8 bytes", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marks := tc.marks
			if marks == nil {
				marks = new(fence.Memory)
			}
			h := fencehttp.Handler(marks, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				t.Error("the handler ran")
			}))
			b := &body{Reader: strings.NewReader("payload")}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, request(tc.method, b, tc.headers...))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d (body %q)", rec.Code, tc.status, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("body %q, want it to say %q", rec.Body, tc.body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if got := rec.Header().Get(fencehttp.MarkHeader); got != tc.mark {
				t.Errorf("%s = %q, want %q", fencehttp.MarkHeader, got, tc.mark)
			}
			if b.reads != 0 {
				t.Errorf("the request's body was read %d times", b.reads)
			}
		})
	}
}

func TestHandlerAdmits(t *testing.T) {
	var marks fence.Memory
	ran := 0
	h := fencehttp.Handler(&marks, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran++
		key, token, ok := fencehttp.Token(r.Context())
		if !ok || key != "a b\u00e9" || token != 4 {
			t.Errorf("Token = %q, %d, %v; want the admitted key and token", key, token, ok)
		}
		if r.Header.Get("X-Caller") != "kept" {
			t.Error("the request reached the handler changed")
		}
		w.WriteHeader(http.StatusCreated)
	}))
	for _, method := range []string{"PUT", "GET", "HEAD"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, request(method, &body{Reader: strings.NewReader("")},
			fencehttp.KeyHeader, "a%20b%C3%A9", fencehttp.TokenHeader, "4", "X-Caller", "kept"))
		if rec.Code != http.StatusCreated {
			t.Fatalf("%s: status %d, want the handler's 201 (body %q)", method, rec.Code, rec.Body)
		}
	}
	if ran != 3 || marks.Mark("a b\u00e9") != 4 {
		t.Fatalf("the handler ran %d times, the mark is %d; want 3 and 4", ran, marks.Mark("a b\u00e9"))
	}
	if _, _, ok := fencehttp.Token(context.Background()); ok {
		t.Fatal("Token outside Handler is ok")
	}
}

func TestHandlerNilMarksPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Handler(nil, h) did not panic")
		}
	}()
	fencehttp.Handler(nil, http.NotFoundHandler())
}

// fenced sends a request of key and token to h in a goroutine of its
// own, and returns the channel of its status.
func fenced(h http.Handler, ctx context.Context, key string, token uint64) <-chan int {
	done := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		r := request("PUT", &body{Reader: strings.NewReader("")},
			fencehttp.KeyHeader, key, fencehttp.TokenHeader, fmt.Sprint(token))
		h.ServeHTTP(rec, r.WithContext(ctx))
		done <- rec.Code
	}()
	return done
}

// gate is a handler that, for each request, says its key on entered
// and returns when leave is closed or sent to.
type gate struct {
	entered chan string
	leave   chan struct{}
	open    func() // closes leave, once
}

func newGate() *gate {
	g := &gate{entered: make(chan string, 10), leave: make(chan struct{})}
	g.open = sync.OnceFunc(func() { close(g.leave) })
	return g
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, _, _ := fencehttp.Token(r.Context())
	g.entered <- key
	<-g.leave
}

func TestHandlerSameKeyWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var marks fence.Memory
		g := newGate()
		defer g.open() // a failed test's handlers return
		h := fencehttp.Handler(&marks, g)
		first := fenced(h, t.Context(), "a", 1)
		<-g.entered
		second := fenced(h, t.Context(), "a", 2)
		synctest.Wait()
		select {
		case <-g.entered:
			t.Fatal("a second request of the key ran while the first's handler runs")
		case code := <-second:
			t.Fatalf("the second request ended (%d) while the first's handler runs", code)
		default:
		}
		g.leave <- struct{}{}
		if code := <-first; code != http.StatusOK {
			t.Fatalf("first: status %d", code)
		}
		<-g.entered
		g.leave <- struct{}{}
		if code := <-second; code != http.StatusOK {
			t.Fatalf("second: status %d", code)
		}
	})
}

func TestHandlerKeysIndependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var marks fence.Memory
		g := newGate()
		defer g.open() // a failed test's handlers return
		h := fencehttp.Handler(&marks, g)
		a := fenced(h, t.Context(), "a", 1)
		<-g.entered
		b := fenced(h, t.Context(), "b", 1)
		if key := <-g.entered; key != "b" {
			t.Fatalf("entered %q, want b", key)
		}
		g.leave <- struct{}{}
		g.leave <- struct{}{}
		if ca, cb := <-a, <-b; ca != http.StatusOK || cb != http.StatusOK {
			t.Fatalf("statuses %d, %d", ca, cb)
		}
	})
}

// TestHandlerWaitEndsWithContext: a request waiting for its key gives up
// when its context ends, answered 503, its handler not run.
func TestHandlerWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var marks fence.Memory
		g := newGate()
		defer g.open() // a failed test's handlers return
		h := fencehttp.Handler(&marks, g)
		first := fenced(h, t.Context(), "a", 1)
		<-g.entered
		ctx, cancel := context.WithCancel(t.Context())
		second := fenced(h, ctx, "a", 2)
		synctest.Wait()
		cancel()
		if code := <-second; code != http.StatusServiceUnavailable {
			t.Fatalf("second: status %d, want 503", code)
		}
		g.open()
		<-first
		if m := marks.Mark("a"); m != 1 {
			t.Fatalf("mark %d, want 1", m)
		}
	})
}

// TestHandlerReleasesOnPanic: a handler's panic ends its admission, so
// the key's next request is admitted.
func TestHandlerReleasesOnPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var marks fence.Memory
		calls := 0
		h := fencehttp.Handler(&marks, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			if calls == 1 {
				panic(http.ErrAbortHandler)
			}
		}))
		func() {
			defer func() {
				if recover() != http.ErrAbortHandler {
					t.Error("the handler's panic did not go through")
				}
			}()
			h.ServeHTTP(httptest.NewRecorder(), request("PUT", &body{Reader: strings.NewReader("")},
				fencehttp.KeyHeader, "a", fencehttp.TokenHeader, "1"))
		}()
		if code := <-fenced(h, t.Context(), "a", 1); code != http.StatusOK {
			t.Fatalf("the next request: status %d", code)
		}
	})
}
