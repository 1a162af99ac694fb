package dockerserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ErrNoEngine means no Docker engine answered a ping: the harness falls
// back to its embedded server.
var ErrNoEngine = errors.New("no Docker engine answers")

// pingTimeout bounds the engine's answer to a ping: an engine that is
// there answers at once, and a harness without one must not wait.
const pingTimeout = 1500 * time.Millisecond

// pollInterval is how often a wait asks the members again.
const pollInterval = 250 * time.Millisecond

// Cluster is a started deployment.
type Cluster struct {
	pool       *dockertest.Pool
	network    *dockertest.Network
	containers map[string]*dockertest.Resource // by name
	host       string                          // where the engine publishes ports
	log        io.Writer
	// URI is the connection string the tests use.
	URI string
}

// Start starts plan's containers from the image repo:tag through the
// Docker engine the environment names (DOCKER_HOST, else the local
// socket), initiates its replica sets, adds its shards, and returns once
// the deployment is ready (see [ReplicaSetReady] and [RouterReady]).
// Progress goes to log. On error nothing is left running.
func Start(ctx context.Context, plan Plan, repo, tag string, log io.Writer) (_ *Cluster, err error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	err = pool.Client.PingWithContext(pingCtx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	c := &Cluster{pool: pool, containers: map[string]*dockertest.Resource{}, host: engineHost(), log: log}
	defer func() {
		if err != nil {
			if cerr := c.Close(); cerr != nil {
				fmt.Fprintf(log, "dockerserver: cleaning up after a failed start: %v\n", cerr)
			}
		}
	}()

	c.network, err = pool.CreateNetwork(plan.Network, func(o *dc.CreateNetworkOptions) {
		o.Labels = map[string]string{Label: "1"}
	})
	if err != nil {
		return nil, fmt.Errorf("network %s: %w", plan.Network, err)
	}
	for _, rs := range plan.ReplicaSets {
		for _, m := range rs.Members {
			if err := c.run(m, repo, tag); err != nil {
				return nil, err
			}
		}
	}
	for _, rs := range plan.ReplicaSets {
		if err := c.initiate(ctx, rs); err != nil {
			return nil, err
		}
	}
	if plan.Router != nil {
		if err := c.run(*plan.Router, repo, tag); err != nil {
			return nil, err
		}
		if err := c.addShards(ctx, plan); err != nil {
			return nil, err
		}
	}
	c.URI = plan.URI(c.addr(plan.Entry))
	return c, nil
}

// engineHost is where published ports are reached: the engine's host
// when it is reached over TCP, else this machine.
func engineHost() string {
	if u, err := url.Parse(os.Getenv("DOCKER_HOST")); err == nil && u.Scheme == "tcp" && u.Hostname() != "" {
		return u.Hostname()
	}
	return "localhost"
}

func (c *Cluster) run(m Container, repo, tag string) error {
	fmt.Fprintf(c.log, "dockerserver: starting %s (%s:%s): %s\n", m.Name, repo, tag, strings.Join(m.Cmd, " "))
	res, err := c.pool.RunWithOptions(&dockertest.RunOptions{
		Name:         m.Name,
		Hostname:     m.Name,
		Repository:   repo,
		Tag:          tag,
		Entrypoint:   Entrypoint(),
		Cmd:          m.Cmd,
		ExposedPorts: []string{PortID},
		Networks:     []*dockertest.Network{c.network},
		Labels:       map[string]string{Label: "1"},
	}, func(hc *dc.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return fmt.Errorf("start %s from %s:%s: %w", m.Name, repo, tag, err)
	}
	c.containers[m.Name] = res
	return nil
}

// addr is the host:port the engine published name's port on.
func (c *Cluster) addr(name string) string {
	return net.JoinHostPort(c.host, c.containers[name].GetPort(PortID))
}

// connect opens a client to one member, reached directly.
func (c *Cluster) connect(name string) (*mongo.Client, error) {
	return mongo.Connect(options.Client().
		ApplyURI("mongodb://" + c.addr(name) + "/?directConnection=true").
		SetServerSelectionTimeout(2 * time.Second).
		SetTimeout(5 * time.Second))
}

func disconnect(cl *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = cl.Disconnect(ctx)
}

// initiate runs replSetInitiate on the first member until it takes, then
// waits for the set to be ready.
func (c *Cluster) initiate(ctx context.Context, rs ReplicaSet) error {
	clients := make([]*mongo.Client, len(rs.Members))
	for i, m := range rs.Members {
		cl, err := c.connect(m.Name)
		if err != nil {
			return err
		}
		defer disconnect(cl)
		clients[i] = cl
	}
	admin := clients[0].Database("admin")
	fmt.Fprintf(c.log, "dockerserver: initiating replica set %s\n", rs.ID)
	err := poll(ctx, func() error {
		err := admin.RunCommand(ctx, rs.InitiateCommand()).Err()
		if Initiated(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("replSetInitiate %s: %w", rs.ID, err)
	}
	return poll(ctx, func() error {
		answers := make([]Answer, len(clients))
		for i, cl := range clients {
			answers[i].Err = cl.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&answers[i].Hello)
		}
		return ReplicaSetReady(rs, answers)
	})
}

// addShards runs the addShard commands on the mongos until each takes,
// then waits until the mongos lists every shard.
func (c *Cluster) addShards(ctx context.Context, plan Plan) error {
	cl, err := c.connect(plan.Router.Name)
	if err != nil {
		return err
	}
	defer disconnect(cl)
	admin := cl.Database("admin")
	for _, cmd := range plan.AddShardCommands() {
		fmt.Fprintf(c.log, "dockerserver: addShard %v\n", cmd[0].Value)
		if err := poll(ctx, func() error { return admin.RunCommand(ctx, cmd).Err() }); err != nil {
			return fmt.Errorf("addShard %v: %w", cmd[0].Value, err)
		}
	}
	return poll(ctx, func() error {
		var hello Answer
		hello.Err = admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello.Hello)
		var list struct {
			Shards []struct {
				ID string `bson:"_id"`
			} `bson:"shards"`
		}
		var listed []string
		if err := admin.RunCommand(ctx, bson.D{{Key: "listShards", Value: 1}}).Decode(&list); err == nil {
			for _, s := range list.Shards {
				listed = append(listed, s.ID)
			}
		}
		return RouterReady(plan, hello, listed)
	})
}

// poll runs try until it returns nil or ctx ends; the error then is the
// last try's.
func poll(ctx context.Context, try func() error) error {
	for {
		err := try()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last: %v", context.Cause(ctx), err)
		case <-time.After(pollInterval):
		}
	}
}

// Close removes the containers (with their volumes) and the network.
func (c *Cluster) Close() error {
	var errs []error
	for name, res := range c.containers {
		if err := c.pool.Purge(res); err != nil && !isNoSuchContainer(err) {
			errs = append(errs, fmt.Errorf("remove %s: %w", name, err))
		}
	}
	if c.network != nil {
		if err := c.network.Close(); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %w", c.network.Network.Name, err))
		}
	}
	return errors.Join(errs...)
}

// isNoSuchContainer: auto-removal got there first.
func isNoSuchContainer(err error) bool {
	var nsc *dc.NoSuchContainer
	return errors.As(err, &nsc)
}
