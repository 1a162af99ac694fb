package statuspage

import (
	"context"
	"embed"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

//go:embed assets
var assets embed.FS

// Config is what the page reads, and how.
type Config struct {
	// Client reads the keys and their queues. Required.
	Client *dsync.Client
	// Members, if set, gives the elections' members (leadermongo.Store
	// on MongoDB); without it the page shows who leads, with no members.
	Members leader.MemberStore
	// Seen: members whose last heartbeat is at most this old are shown.
	// Default dsync.DefaultTTL.
	Seen time.Duration
	// Now, if set, returns the store's time, from which the page counts
	// how long a key was held and when its lease ends (the leases are
	// the store's times). Without it the page counts from the local
	// clock, and says so.
	Now func(context.Context) (time.Time, error)
	// PageSize is how many keys a page shows at most. Default 100.
	PageSize int
	// Timeout bounds one read of the store. Default 5s.
	Timeout time.Duration
}

type handler struct {
	cfg Config
	mux *http.ServeMux
}

// New returns the page's handler. It serves the page at "/", its data at
// "status.json" (a Snapshot; query parameters namespace, prefix, after and
// limit), and its script and style beside it. All are under relative paths,
// so that it can be mounted under any prefix (http.StripPrefix). It answers
// GET and HEAD only.
func New(cfg Config) http.Handler {
	if cfg.Seen <= 0 {
		cfg.Seen = dsync.DefaultTTL
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	h := &handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.file("assets/index.html", "text/html; charset=utf-8"))
	h.mux.HandleFunc("GET /app.js", h.file("assets/app.js", "text/javascript; charset=utf-8"))
	h.mux.HandleFunc("GET /style.css", h.file("assets/style.css", "text/css; charset=utf-8"))
	h.mux.HandleFunc("GET /status.json", h.serveJSON)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *handler) file(name, ctype string) http.HandlerFunc {
	body, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(body)
	}
}

// serveJSON serves one Snapshot; 503 when the store cannot be read (the
// Snapshot then says why in Error), 400 for a bad limit.
func (h *handler) serveJSON(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := query{namespace: v.Get("namespace"), prefix: v.Get("prefix"), after: v.Get("after"), limit: h.cfg.PageSize}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > h.cfg.PageSize {
			http.Error(w, "limit: a number from 1 to "+strconv.Itoa(h.cfg.PageSize), http.StatusBadRequest)
			return
		}
		q.limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	snap := h.read(ctx, q)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if snap.Error != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(snap)
}
