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
	"fmt"
	"io"
	"log/slog"
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
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader/operator"
)

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
	counts   counts
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
	copts := options.Client().ApplyURI(cfg.URI).
		SetConnectTimeout(connectTimeout).
		SetHeartbeatInterval(500 * time.Millisecond).
		SetServerSelectionTimeout(5 * time.Second).
		SetTimeout(5 * time.Second)
	if level <= slog.LevelDebug {
		copts.SetMonitor(commandLog(w.logger))
	}
	client, err := mongo.Connect(copts)
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
	w.reportCounts()

	regName := StoredKey(cfg.Mode, cfg.Key)
	if cfg.Mode == ModeElection {
		regName = operator.LockKey(cfg.Key)
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
	case ModePartition:
		err = w.runPartition(ctx, db)
	case ModeKeys:
		err = w.runKeys(ctx, db)
	case ModeLockSet:
		err = w.runLockSet(ctx, db)
	default:
		err = fmt.Errorf("unknown mode %q", cfg.Mode)
	}
	w.flushCounts()
	w.emit(history.Event{Ev: history.EvExit, Err: errString(err)})
	return err
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
// renew interval, its poll interval, its logger and the recording of its
// requests) and the store.
func (w *worker) client(db *mongo.Database) (*dsync.Client, *dsyncmongo.Store, error) {
	cfg := &w.cfg
	store, err := dsyncmongo.NewStore(db, dsyncmongo.WithClock(w.clock), dsyncmongo.WithLogger(w.logger))
	if err != nil {
		return nil, nil, err
	}
	copts := []dsync.ClientOption{dsync.ClientWithTTL(cfg.TTL), dsync.ClientWithPollInterval(cfg.Poll), dsync.ClientWithLogger(w.logger)}
	if cfg.Renew > 0 {
		copts = append(copts, dsync.ClientWithRenewInterval(cfg.Renew))
	}
	switch {
	case cfg.Grace > 0:
		copts = append(copts, dsync.ClientWithOutageGrace(cfg.Grace))
	case cfg.Grace < 0:
		copts = append(copts, dsync.ClientWithOutageGrace(0))
	}
	if cfg.SafetyPoll > 0 {
		copts = append(copts, dsync.ClientWithSafetyPoll(cfg.SafetyPoll))
	}
	if cfg.HintListen != "" {
		copts = append(copts, dsync.ClientWithHints(cfg.HintListen, cfg.HintAdvertise))
	} else {
		// Off, not the library's default (on over loopback, where the
		// suite's server is): a worker given no address takes no hints.
		copts = append(copts, dsync.ClientWithHints("", ""))
	}
	if cfg.Runs {
		clienthook.MongoReadRuns(store)
	}
	c, err := dsync.NewClient(w.rec.over(store, w.takeHints), copts...)
	if err != nil {
		return nil, nil, err
	}
	// The grace the Client has, whether Config.Grace set it or it is the
	// library's default (fitted to the store's span): the recorder must
	// predict suspensions and resumes as the Client makes them.
	w.rec.setGrace(clienthook.ClientParams(c).OutageGrace)
	return c, store, nil
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
