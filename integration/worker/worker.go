// Package worker is the process the integration tests start many of: it
// takes a lock (or campaigns for leadership) in a loop, increments a
// register under it, and records every hold in a history file for the
// checker (package history). The test binary re-executes itself with
// EnvConfig set, and its TestMain hands over to Main.
//
// A worker can be killed (SIGKILL) or paused (SIGSTOP) at any moment: it
// writes each event with one O_APPEND write as it happens. SIGUSR1 jumps
// its injected wall clock by Config.JumpStep; SIGUSR2 ends the hold it is
// in (if any) before its time. It stops after Config.Holds holds, or when
// its stdin closes or SIGTERM arrives, finishing the hold it is in first.
package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/register"
	"github.com/go-dsync/dsync/leader"
)

// EnvConfig is the environment variable that carries a worker's Config as
// JSON; its presence makes the test binary a worker.
const EnvConfig = "DSYNC_INTEGRATION_WORKER"

// Modes.
const (
	ModeMutex    = "mutex"
	ModeElection = "election"
)

// Register kinds.
const (
	RegFenced   = "fenced"
	RegUnfenced = "unfenced"
)

// Config describes one worker.
type Config struct {
	Name       string        // worker name, e.g. "w1"
	URI        string        // server (or proxy) URI
	DB         string        // database
	Mode       string        // ModeMutex, ModeElection, ModeRWMutex, ModeSemaphore or ModeOnce
	Key        string        // lock key, or election name
	TTL        time.Duration // lease TTL
	Renew      time.Duration // renew interval; 0: TTL/3
	Poll       time.Duration // backend poll interval; 0: 20 ms
	HistoryDir string        // where the history file goes
	Register   string        // RegFenced, RegUnfenced or "" (no register)
	Work       time.Duration // between the register read and the validity check
	Window     time.Duration // between the validity check and the write
	// UnlockWindow is a pause between the end of the hold and Unlock.
	UnlockWindow time.Duration
	HoldFor      time.Duration // how long to keep each hold (×0.5–1.5, random)
	Gap          time.Duration // pause between holds
	WallOffset   time.Duration // offset of the injected wall clock
	JumpStep     time.Duration // wall-clock jump per SIGUSR1
	Observe      bool          // election mode: also record Observe
	Holds        int           // stop after this many holds; 0: until told
	LogLevel     string        // "debug", "info", "warn" (default), "error"
	// ConnectTimeout is the client's connectTimeoutMS, which is also how
	// long the driver waits for a heartbeat; 0: 2 s.
	ConnectTimeout time.Duration
}

// Encode returns the environment entry that makes a process a worker.
func (c Config) Encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return EnvConfig + "=" + string(b)
}

// FromEnv returns the Config in the environment, if any.
func FromEnv() (Config, bool, error) {
	s, ok := os.LookupEnv(EnvConfig)
	if !ok {
		return Config{}, false, nil
	}
	var c Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return Config{}, true, fmt.Errorf("worker: bad %s: %w", EnvConfig, err)
	}
	return c, true, nil
}

// worker is the state of a running worker process.
type worker struct {
	cfg    Config
	pid    int
	hist   *history.Writer
	out    *bufio.Writer
	outMu  sync.Mutex
	logger *slog.Logger
	clock  *SkewClock
	rec    *recorder
	reg    register.Register
	seq    atomic.Int64
	// endHolds counts SIGUSR2s: a hold ends when it changes.
	endHolds atomic.Int64
}

// Main runs a worker until it is told to stop, and returns the exit code.
func Main(cfg Config) int {
	w := &worker{cfg: cfg, pid: os.Getpid(), out: bufio.NewWriter(os.Stdout)}
	if err := w.run(); err != nil {
		fmt.Fprintf(os.Stderr, "worker %s (pid %d): %v\n", cfg.Name, w.pid, err)
		return 1
	}
	return 0
}

func (w *worker) run() error {
	cfg := &w.cfg
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	level := slog.LevelWarn
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	w.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).
		With("worker", cfg.Name, "pid", w.pid)

	var err error
	w.hist, err = history.Create(filepath.Join(cfg.HistoryDir, history.FileName(cfg.Name, w.pid)))
	if err != nil {
		return err
	}
	defer w.hist.Close()
	w.emit(history.Event{Ev: history.EvStart})

	// Stop on SIGTERM/SIGINT, or when the test closes our stdin.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()

	go w.monitorStalls(ctx)

	w.clock = NewSkewClock(cfg.WallOffset)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		for range usr1 {
			w.clock.Jump(cfg.JumpStep)
			w.logger.Info("wall clock jumped", "offset", w.clock.Offset())
		}
	}()

	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	defer signal.Stop(usr2)
	go func() {
		for range usr2 {
			w.endHolds.Add(1)
		}
	}()

	connectTimeout := cfg.ConnectTimeout
	if connectTimeout == 0 {
		connectTimeout = 2 * time.Second
	}
	client, err := mongo.Connect(options.Client().ApplyURI(cfg.URI).
		SetConnectTimeout(connectTimeout).
		SetHeartbeatInterval(500 * time.Millisecond).
		SetServerSelectionTimeout(5 * time.Second).
		SetTimeout(5 * time.Second))
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = client.Disconnect(dctx)
	}()
	db := client.Database(cfg.DB)

	w.rec = newRecorder(w, cfg.TTL)

	regName := StoredKey(cfg.Mode, cfg.Key)
	if cfg.Mode == ModeElection {
		regName = leader.LockKey(cfg.Key)
	}
	switch cfg.Register {
	case RegFenced:
		w.reg = register.NewFenced(db, regName)
	case RegUnfenced:
		w.reg = register.NewUnfenced(db, regName)
	}

	switch cfg.Mode {
	case ModeMutex, "":
		err = w.runMutex(ctx, db)
	case ModeElection:
		err = w.runElection(ctx, db)
	case ModeRWMutex, ModeSemaphore:
		err = w.runShared(ctx, db)
	case ModeOnce:
		err = w.runOnce(ctx, db)
	default:
		err = fmt.Errorf("unknown mode %q", cfg.Mode)
	}
	w.emit(history.Event{Ev: history.EvExit, Err: errString(err)})
	return err
}

// Stall monitoring: a goroutine sleeps stallTick at a time; a wake-up
// more than stallMin late means the process was not scheduled (the
// host is overloaded, or the process was stopped), and is recorded.
const (
	stallTick = 5 * time.Millisecond
	stallMin  = 10 * time.Millisecond
)

// monitorStalls records the times this process was not scheduled. The
// library cannot signal a loss on time while its process does not run
// (the limit dsync documents for paused processes); these records let the
// checker tell that apart from a late signal.
func (w *worker) monitorStalls(ctx context.Context) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	last := history.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := history.Now()
		if now-last > int64(stallTick+stallMin) {
			w.emit(history.Event{Ev: history.EvStall, T: last + int64(stallTick), End: now})
		}
		last = now
	}
}

// emit records ev in the history file and echoes it on stdout for the
// test that controls this worker.
func (w *worker) emit(ev history.Event) {
	if ev.T == 0 {
		ev.T = history.Now()
	}
	ev.Worker, ev.PID = w.cfg.Name, w.pid
	if err := w.hist.Write(ev); err != nil {
		w.logger.Error("history write failed", "err", err)
	}
	b, _ := json.Marshal(ev)
	w.outMu.Lock()
	_, _ = w.out.Write(append(b, '\n'))
	_ = w.out.Flush()
	w.outMu.Unlock()
}

// client returns the worker's Client over a dsyncmongo store on db (the
// store's clock and logger; the Client's lease of the worker's TTL and
// renew interval, its poll interval and the recording of its requests),
// the store, and the options of its primitives (a logger).
func (w *worker) client(db *mongo.Database) (*dsync.Client, *dsyncmongo.Store, []dsync.KeyOption, error) {
	cfg := &w.cfg
	store, err := dsyncmongo.NewStore(db, dsyncmongo.WithClock(w.clock), dsyncmongo.WithLogger(w.logger))
	if err != nil {
		return nil, nil, nil, err
	}
	copts := []dsync.ClientOption{dsync.WithTTL(cfg.TTL), dsync.ClientWithPollInterval(cfg.Poll), dsync.ClientWithLogger(w.logger)}
	if cfg.Renew > 0 {
		copts = append(copts, dsync.WithRenewInterval(cfg.Renew))
	}
	c, err := dsync.NewClient(w.rec.over(store), copts...)
	if err != nil {
		return nil, nil, nil, err
	}
	return c, store, []dsync.KeyOption{dsync.WithLogger(w.logger)}, nil
}

func (w *worker) runMutex(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	backend, _, opts, err := w.client(db)
	if err != nil {
		return err
	}
	defer backend.Close()
	mu, err := dsync.NewMutex(backend, cfg.Key, opts...)
	if err != nil {
		return err
	}
	for n := 0; cfg.Holds == 0 || n < cfg.Holds; n++ {
		if err := mu.LockContext(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		h := &hold{w: w, key: cfg.Key, token: mu.Token()}
		w.rec.holding(cfg.Key, h.token, history.Now())
		w.emit(history.Event{Ev: history.EvAcquire, Owner: mu.Owner(), Key: cfg.Key, Token: h.token,
			DL: history.Mono(mu.ValidUntil()), Src: history.SrcLib, TTL: int64(cfg.TTL), Margin: int64(cfg.TTL / 20)})
		deadline := func() int64 { return history.Mono(mu.ValidUntil()) }
		stopWatch := h.watch(mu.Lost(), deadline, history.SrcLib)

		w.criticalSection(ctx, h)

		h.end(deadline(), history.SrcLib)
		if cfg.UnlockWindow > 0 {
			w.emit(history.Event{Ev: history.EvUnlockWindow, Key: cfg.Key, Token: h.token})
			time.Sleep(cfg.UnlockWindow)
		}
		// The released event carries the time Unlock was called and the
		// deadline in force then: an Unlock called after the deadline must
		// report ErrLost (the hold was lost before the call).
		dl, called := deadline(), history.Now()
		uctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
		err := mu.UnlockContext(uctx)
		cancel()
		stopWatch()
		w.emit(history.Event{Ev: history.EvReleased, Key: cfg.Key, Token: h.token, T: called, DL: dl, Src: history.SrcLib,
			Lost: errors.Is(err, dsync.ErrLost), Err: errString(err)})
		w.rec.forget(cfg.Key, h.token)
		if !sleepCtx(ctx, cfg.Gap) {
			return nil
		}
	}
	return nil
}

// hold tracks one hold while the worker is in it.
type hold struct {
	w     *worker
	key   string
	token uint64
	lost  <-chan struct{}

	mu       sync.Mutex
	ended    bool
	lostSeen bool
	wg       sync.WaitGroup
}

// watch records the loss signal when lost closes, unless the hold has
// ended first. It returns a function that stops watching.
func (h *hold) watch(lost <-chan struct{}, deadline func() int64, src string) (stop func()) {
	h.lost = lost
	done := make(chan struct{})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		select {
		case <-lost:
			t := history.Now()
			h.mu.Lock()
			defer h.mu.Unlock()
			if !h.ended && !h.lostSeen {
				h.lostSeen = true
				h.w.emit(history.Event{Ev: history.EvLost, Key: h.key, Token: h.token, T: t, DL: deadline(), Src: src})
			}
		case <-done:
		}
	}()
	return func() { close(done); h.wg.Wait() }
}

func (h *hold) isLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// end records that the worker stops relying on the hold now. dl is the
// deadline in force.
func (h *hold) end(dl int64, src string) {
	t := history.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	lost := h.isLost()
	if lost && !h.lostSeen {
		// The watcher has not run yet: this is when the loss was seen.
		h.lostSeen = true
		h.w.emit(history.Event{Ev: history.EvLost, Key: h.key, Token: h.token, T: t, DL: dl, Src: src})
	}
	h.ended = true
	h.w.emit(history.Event{Ev: history.EvEnd, Key: h.key, Token: h.token, T: t, DL: dl, Src: src, Lost: lost})
}

// criticalSection does one read-modify-write of the register, then keeps
// the hold for a while (until a SIGUSR2, at most). valid is checked before
// the write; a pause in the window after it is what fencing is for.
func (w *worker) criticalSection(ctx context.Context, h *hold) {
	cfg := &w.cfg
	until := time.Now().Add(time.Duration(float64(cfg.HoldFor) * (0.5 + rand.Float64())))
	ends := w.endHolds.Load()
	if w.reg != nil {
		w.readModifyWrite(h)
	}
	for time.Now().Before(until) && !h.isLost() && ctx.Err() == nil && w.endHolds.Load() == ends {
		sleepCtx(ctx, min(10*time.Millisecond, time.Until(until)))
	}
}

func (w *worker) readModifyWrite(h *hold) {
	cfg := &w.cfg
	rctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
	v, err := w.reg.Read(rctx, h.token)
	cancel()
	if err != nil {
		w.logger.Info("register read failed", "token", h.token, "err", err)
		return
	}
	for end := time.Now().Add(cfg.Work); time.Now().Before(end) && !h.isLost(); {
		time.Sleep(min(5*time.Millisecond, time.Until(end)))
	}
	if h.isLost() {
		return
	}
	if cfg.Window > 0 {
		w.emit(history.Event{Ev: history.EvWindow, Key: h.key, Token: h.token})
		time.Sleep(cfg.Window)
	}
	wid := fmt.Sprintf("%s.%d.%d", cfg.Name, w.pid, w.seq.Add(1))
	w.emit(history.Event{Ev: history.EvWriteStart, Key: h.key, Token: h.token, Value: v + 1, WID: wid})
	wctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
	err = w.reg.Write(wctx, h.token, v+1, wid)
	cancel()
	out := history.OutOK
	switch {
	case errors.Is(err, register.ErrStale):
		out = history.OutStale
	case err != nil:
		out = history.OutUnknown
	}
	w.emit(history.Event{Ev: history.EvWrite, Key: h.key, Token: h.token, Value: v + 1, WID: wid, Outcome: out, Err: errString(err)})
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// SkewClock is a clockcheck.Clock whose wall clock is off by an offset
// that can jump; its monotonic clock is the process's.
type SkewClock struct {
	start time.Time
	off   atomic.Int64
}

// NewSkewClock returns a clock whose wall time is off by offset.
func NewSkewClock(offset time.Duration) *SkewClock {
	c := &SkewClock{start: time.Now()}
	c.off.Store(int64(offset))
	return c
}

// Wall implements clockcheck.Clock.
func (c *SkewClock) Wall() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.off.Load()))
}

// Monotonic implements clockcheck.Clock.
func (c *SkewClock) Monotonic() time.Duration { return time.Since(c.start) }

// Jump moves the wall clock by d.
func (c *SkewClock) Jump(d time.Duration) { c.off.Add(int64(d)) }

// Offset returns the current offset.
func (c *SkewClock) Offset() time.Duration { return time.Duration(c.off.Load()) }
