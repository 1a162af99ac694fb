package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/go-dsync/dsync/bench/harness"
)

// etcdDriver is etcd's concurrency package: Mutex and Election over a
// Session, whose lease the client keeps alive; and the RWMutex of its
// experimental/recipes over the same Session.
type etcdDriver struct{ endpoints []string }

func (d *etcdDriver) Name() string { return "etcd" }

func (d *etcdDriver) Describe(ctx context.Context) (string, string) {
	lib := "go.etcd.io/etcd/client/v3/concurrency " + moduleVersion("go.etcd.io/etcd/client/v3")
	server := "etcd (unknown version)"
	c, err := clientv3.New(clientv3.Config{Endpoints: d.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err == nil {
		defer c.Close()
		if st, err := c.Status(ctx, d.endpoints[0]); err == nil {
			server = "etcd " + st.Version + " (one member)"
		}
	}
	return lib, server
}

func (d *etcdDriver) Connect(ctx context.Context, m *harness.Meter, ns string) (harness.Conn, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   d.endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				if err != nil {
					return nil, err
				}
				return m.Conn(conn), nil
			}),
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				t := time.Now()
				err := invoker(ctx, method, req, reply, cc, opts...)
				m.Command(path.Base(method), time.Since(t), err != nil)
				return err
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				s, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return &countedStream{ClientStream: s, m: m, name: path.Base(method)}, nil
			}),
		},
	})
	if err != nil {
		return nil, err
	}
	return &etcdConn{c: c, ns: ns, sessions: map[time.Duration]*concurrency.Session{}}, nil
}

// countedStream counts each message sent on a stream as a command, when
// its reply arrives (a keepalive's, or a watch's creation), and times it.
type countedStream struct {
	grpc.ClientStream
	m    *harness.Meter
	name string

	mu   sync.Mutex
	sent []time.Time
}

func (s *countedStream) SendMsg(msg any) error {
	s.mu.Lock()
	s.sent = append(s.sent, time.Now())
	s.mu.Unlock()
	return s.ClientStream.SendMsg(msg)
}

func (s *countedStream) RecvMsg(msg any) error {
	err := s.ClientStream.RecvMsg(msg)
	s.mu.Lock()
	if len(s.sent) > 0 {
		t := s.sent[0]
		s.sent = s.sent[1:]
		s.m.Command(s.name, time.Since(t), err != nil)
	}
	s.mu.Unlock()
	return err
}

type etcdConn struct {
	c  *clientv3.Client
	ns string

	mu       sync.Mutex
	sessions map[time.Duration]*concurrency.Session // one per TTL, as an application would keep
}

// session returns the process's session with lease ttl (whole seconds).
func (c *etcdConn) session(ttl time.Duration) (*concurrency.Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[ttl]; ok {
		return s, nil
	}
	secs := max(int((ttl+time.Second-1)/time.Second), 1)
	s, err := concurrency.NewSession(c.c, concurrency.WithTTL(secs))
	if err != nil {
		return nil, err
	}
	c.sessions[ttl] = s
	return s, nil
}

func (c *etcdConn) NewMutex(key string, ttl time.Duration) (harness.Locker, error) {
	s, err := c.session(ttl)
	if err != nil {
		return nil, err
	}
	return &etcdMutex{mu: concurrency.NewMutex(s, "/"+c.ns+"/lock/"+key), s: s}, nil
}

func (c *etcdConn) NewElection(name string, ttl time.Duration) (harness.Locker, error) {
	s, err := c.session(ttl)
	if err != nil {
		return nil, err
	}
	return &etcdElection{e: concurrency.NewElection(s, "/"+c.ns+"/election/"+name), s: s}, nil
}

func (c *etcdConn) RenewCommands() []string { return []string{"LeaseKeepAlive"} }

func (c *etcdConn) Drop(ctx context.Context) error {
	_, err := c.c.Delete(ctx, "/"+c.ns+"/", clientv3.WithPrefix())
	return err
}

func (c *etcdConn) Close() error {
	c.mu.Lock()
	var errs []error
	for _, s := range c.sessions {
		errs = append(errs, s.Close())
	}
	c.mu.Unlock()
	return errors.Join(append(errs, c.c.Close())...)
}

type etcdMutex struct {
	mu *concurrency.Mutex
	s  *concurrency.Session
}

func (m *etcdMutex) Lock(ctx context.Context) error   { return m.mu.Lock(ctx) }
func (m *etcdMutex) Unlock(ctx context.Context) error { return m.mu.Unlock(ctx) }

func (m *etcdMutex) TryLock(ctx context.Context) (bool, error) {
	err := m.mu.TryLock(ctx)
	if errors.Is(err, concurrency.ErrLocked) {
		return false, nil
	}
	return err == nil, err
}

func (m *etcdMutex) Lost() bool {
	select {
	case <-m.s.Done():
		return true
	default:
		return false
	}
}

// NewRWMutex is the reader/writer lock of etcd's experimental/recipes:
// RLock puts a key of the session's lease under "<key>/read" and waits for
// the writers' keys created before it to go; RUnlock deletes it. Its
// methods take no context (it uses context.TODO()).
func (c *etcdConn) NewRWMutex(key string, ttl time.Duration) (harness.RWLocker, error) {
	s, err := c.session(ttl)
	if err != nil {
		return nil, err
	}
	return etcdRWMutex{recipe.NewRWMutex(s, "/"+c.ns+"/rwmutex/"+key)}, nil
}

type etcdRWMutex struct{ rw *recipe.RWMutex }

func (m etcdRWMutex) RLock(context.Context) error   { return m.rw.RLock() }
func (m etcdRWMutex) RUnlock(context.Context) error { return m.rw.RUnlock() }

// etcdRecipes is what etcd's Go client offers for coordination, for the
// primitives it lacks.
const etcdRecipes = "go.etcd.io/etcd/client/v3 has Mutex, Election and STM (concurrency) and Barrier, DoubleBarrier, Queue, " +
	"PriorityQueue and RWMutex (experimental/recipes)"

// Lacks says why etcd has no column in the semaphore and Once scenarios,
// and no status page or compaction in the scale scenario.
func (d *etcdDriver) Lacks(scenario string) string {
	switch scenario {
	case harness.SemaphoreScenario:
		return "no semaphore in etcd's client: " + etcdRecipes + "; the bench does not write one"
	case harness.OnceScenario:
		return "no Once in etcd's client: " + etcdRecipes
	}
	return scaleLacks(scenario, etcdStatus, etcdCompaction)
}

type etcdElection struct {
	e *concurrency.Election
	s *concurrency.Session
}

func (e *etcdElection) Lock(ctx context.Context) error {
	return e.e.Campaign(ctx, fmt.Sprint(e.s.Lease()))
}

func (e *etcdElection) Unlock(ctx context.Context) error { return e.e.Resign(ctx) }
