package mongotest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// errNoDocker means no Docker engine answered (or Docker was disabled): not
// worth a log line, FerretDB is the expected fallback.
var errNoDocker = errors.New("no Docker engine")

const defaultMongoImage = "mongo:7"

type dockerServer struct {
	pool  *dockertest.Pool
	res   *dockertest.Resource
	image string
	uri   string
}

func (d *dockerServer) shortID() string {
	id := d.res.Container.ID
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// startDocker starts a single-node replica set in Docker. It returns
// errNoDocker quickly (< 2 s) when no engine answers.
func startDocker() (*dockerServer, error) {
	switch strings.ToLower(os.Getenv("DSYNC_MONGOTEST_DOCKER")) {
	case "0", "false", "no", "off":
		return nil, errNoDocker
	}
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, errNoDocker
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	err = pool.Client.PingWithContext(ctx)
	cancel()
	if err != nil {
		pool.Client.HTTPClient.CloseIdleConnections()
		return nil, errNoDocker
	}

	image := os.Getenv("DSYNC_MONGOTEST_MONGO_IMAGE")
	if image == "" {
		image = defaultMongoImage
	}
	repo, tag, ok := strings.Cut(image, ":")
	if !ok {
		tag = "latest"
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: repo,
		Tag:        tag,
		// `timeout` makes a container left behind by a crashed test binary
		// stop (and, with AutoRemove, vanish) after an hour. dockertest's
		// Resource.Expire would leave a goroutine blocked in an HTTP call,
		// which goleak reports.
		Entrypoint: []string{"timeout", "3600", "docker-entrypoint.sh"},
		Cmd:        []string{"mongod", "--replSet", "rs0", "--bind_ip_all"},
		Labels:     map[string]string{"dsync.mongotest": "1"},
	}, func(hc *dc.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		pool.Client.HTTPClient.CloseIdleConnections()
		return nil, fmt.Errorf("run %s: %w", image, err)
	}
	d := &dockerServer{pool: pool, res: res, image: image}

	hostPort := res.GetHostPort("27017/tcp")
	d.uri = "mongodb://" + hostPort + "/?directConnection=true"
	if err := initReplicaSet(d.uri, 90*time.Second); err != nil {
		_ = d.stop()
		return nil, fmt.Errorf("replica set in %s: %w", image, err)
	}
	return d, nil
}

// initReplicaSet waits for mongod, runs replSetInitiate and waits until the
// node is a writable primary.
func initReplicaSet(uri string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(2 * time.Second))
	if err != nil {
		return err
	}
	defer disconnect(c)
	admin := c.Database("admin")

	initiated := false
	var last error
	for {
		if !initiated {
			err := admin.RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: bson.D{
				{Key: "_id", Value: "rs0"},
				{Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: "localhost:27017"}}}},
			}}}).Err()
			var ce mongo.CommandError
			switch {
			case err == nil:
				initiated = true
			case errors.As(err, &ce) && ce.Name == "AlreadyInitialized":
				initiated = true
			default:
				last = err
			}
		}
		if initiated {
			var hello struct {
				IsWritablePrimary bool `bson:"isWritablePrimary"`
			}
			err := admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello)
			if err == nil && hello.IsWritablePrimary {
				return nil
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not a writable primary after %v: %v", timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (d *dockerServer) stop() error {
	err := d.pool.Purge(d.res)
	d.pool.Client.HTTPClient.CloseIdleConnections()
	return err
}
