// Package fencehttptest runs the conformance suite fence/fencetest over
// HTTP. It checks package fencehttp's adapter, not an HTTP service of one's
// own.
//
// Its Resource is a fencetest.Resource whose writes are requests, sent
// through fencehttp.Transport to a service whose handler, wrapped by
// fencehttp.Handler, writes registers kept in memory. It checks the HTTP
// adapter with any mark store, a fence.Marks of one's own included:
//
//	r := fencehttptest.NewResource(marks)
//	defer r.Close()
//	fencetest.Run(t, r, fencetest.Options{})
package fencehttptest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencehttp"
	"github.com/go-dsync/dsync/fence/fencetest"
)

// writeHeader names a write's entry in Resource.calls, so that the
// handler serving it calls its Admitted.
const writeHeader = "Fencehttptest-Write"

// A Resource is a fenced service whose instances share one register per
// key. It has one or more instances, each an httptest.Server on loopback.
// Its writes go to the instances in turn; its reads look at the registers
// in memory.
type Resource struct {
	servers []*httptest.Server
	turn    atomic.Uint64 // the next write's instance
	ids     atomic.Uint64

	mu    sync.Mutex
	reg   map[string]int64
	calls map[string]*call
}

// call is one Write under way: its Admitted, and the error it returned.
type call struct {
	admitted func(context.Context) error
	err      error // guarded by Resource.mu
}

var _ fencetest.Resource = (*Resource)(nil)

// NewResource starts a service of one instance per marks, each running
// fencehttp.Handler with its marks. Instances that share a mark store
// (the Marks of package fence/fencesql over one database) make one
// fenced service; instances with a fence.Memory each do not, and the
// suite finds the stale writes that pass between them. Close it when
// done.
func NewResource(marks ...fence.Marks) *Resource {
	if len(marks) == 0 {
		panic("fencehttptest: NewResource needs a fence.Marks")
	}
	r := newResource()
	for _, m := range marks {
		r.servers = append(r.servers, httptest.NewServer(fencehttp.Handler(m, http.HandlerFunc(r.serve))))
	}
	return r
}

// NewUnfenced starts the same service without fencehttp.Handler. It is a
// planted adapter, which fencetest.Check must find stale writes in.
func NewUnfenced() *Resource {
	r := newResource()
	r.servers = append(r.servers, httptest.NewServer(http.HandlerFunc(r.serve)))
	return r
}

func newResource() *Resource {
	return &Resource{reg: make(map[string]int64), calls: make(map[string]*call)}
}

// Close shuts the instances down, once every request has returned.
func (r *Resource) Close() {
	for _, s := range r.servers {
		s.Close()
	}
}

// Write implements fencetest.Resource: a PUT under w's key and token.
// It returns nil for the handler's 204, Stale's error for a refusal,
// the error of w.Admitted if it failed, and any other error as one
// whose outcome is unknown.
func (r *Resource) Write(ctx context.Context, w fencetest.Write) error {
	srv := r.servers[(r.turn.Add(1)-1)%uint64(len(r.servers))]
	id := strconv.FormatUint(r.ids.Add(1), 10)
	c := &call{admitted: w.Admitted}
	r.mu.Lock()
	r.calls[id] = c
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.calls, id)
		r.mu.Unlock()
	}()

	q := url.Values{"key": {w.Key}, "value": {strconv.FormatInt(w.Value, 10)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/?"+q.Encode(), http.NoBody)
	if err != nil {
		return err
	}
	req.Header.Set(writeHeader, id)
	client := &http.Client{Transport: &fencehttp.Transport{Base: srv.Client().Transport, Key: w.Key, Token: w.Token}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := fencehttp.Stale(resp); err != nil {
		return err
	}
	r.mu.Lock()
	err = c.err
	r.mu.Unlock()
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Errorf("fencehttptest: %s: %s", resp.Status, body)
}

// Read implements fencetest.Resource.
func (r *Resource) Read(ctx context.Context, key string) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reg[key], nil
}

// serve is the service's handler: it calls the write's Admitted, then
// sets the register. A write whose Write returned already (its reply
// lost) finds no entry, and applies without it.
func (r *Resource) serve(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	key := q.Get("key")
	value, err := strconv.ParseInt(q.Get("value"), 10, 64)
	if err != nil {
		http.Error(w, "fencehttptest: bad value", http.StatusBadRequest)
		return
	}
	if k, _, ok := fencehttp.Token(req.Context()); ok && k != key {
		http.Error(w, "fencehttptest: the fence's key is not the register's", http.StatusForbidden)
		return
	}
	r.mu.Lock()
	c := r.calls[req.Header.Get(writeHeader)]
	r.mu.Unlock()
	if c != nil && c.admitted != nil {
		if err := c.admitted(req.Context()); err != nil {
			r.mu.Lock()
			c.err = err
			r.mu.Unlock()
			http.Error(w, "fencehttptest: Admitted: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	r.mu.Lock()
	r.reg[key] = value
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
