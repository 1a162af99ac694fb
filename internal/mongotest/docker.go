package mongotest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// errNoDocker means no Docker engine answered (or Docker was disabled): not
// worth a log line, FerretDB is the expected fallback.
var errNoDocker = errors.New("no Docker engine")

const defaultMongoImage = "mongo:7"

// The Docker path talks to the Engine API directly (net/http over
// DOCKER_HOST, default unix:///var/run/docker.sock; TLS with
// DOCKER_TLS_VERIFY and DOCKER_CERT_PATH) rather than through a client
// library, which would put some thirty modules into the graph of every
// program that uses dsync.
const dockerAPI = "/v1.41"

// dockerEngine is an Engine API client. Keep-alives are off, so no
// connection (and no goroutine) outlives a request: goleak stays clean.
type dockerEngine struct {
	hc   *http.Client
	base string // http://docker or https://host:port
	host string // host to reach published ports on
}

func newDockerEngine() (*dockerEngine, error) {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("DOCKER_HOST %q: %w", host, err)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	e := &dockerEngine{hc: &http.Client{Transport: tr}, host: "localhost"}
	switch u.Scheme {
	case "unix":
		path := u.Path
		if path == "" {
			path = u.Host
		}
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		e.base = "http://docker"
	case "tcp", "http", "https":
		e.base = "http://" + u.Host
		if h := u.Hostname(); h != "" {
			e.host = h
		}
		if os.Getenv("DOCKER_TLS_VERIFY") != "" || u.Scheme == "https" {
			cfg, err := dockerTLS()
			if err != nil {
				return nil, err
			}
			tr.TLSClientConfig = cfg
			e.base = "https://" + u.Host
		}
	default:
		return nil, fmt.Errorf("DOCKER_HOST %q: unsupported scheme", host)
	}
	return e, nil
}

func dockerTLS() (*tls.Config, error) {
	dir := os.Getenv("DOCKER_CERT_PATH")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".docker")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if ca, err := os.ReadFile(filepath.Join(dir, "ca.pem")); err == nil {
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AppendCertsFromPEM(ca)
	}
	return cfg, nil
}

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (if not nil). Statuses >= 300 are errors carrying the engine's
// message; the status is returned too.
func (e *dockerEngine) do(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.base+dockerAPI+path, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		var msg struct{ Message string }
		if json.Unmarshal(b, &msg) == nil && msg.Message != "" {
			return resp.StatusCode, fmt.Errorf("%s %s: %s (%d)", method, path, msg.Message, resp.StatusCode)
		}
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(b, out)
	}
	// A pull streams JSON progress lines; an error arrives as one of them.
	for dec := json.NewDecoder(bytes.NewReader(b)); ; {
		var line struct{ Error string }
		if dec.Decode(&line) != nil {
			break
		}
		if line.Error != "" {
			return resp.StatusCode, fmt.Errorf("%s %s: %s", method, path, line.Error)
		}
	}
	return resp.StatusCode, nil
}

type dockerServer struct {
	engine *dockerEngine
	id     string
	image  string
	uri    string
}

func (d *dockerServer) shortID() string {
	id := d.id
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
	engine, err := newDockerEngine()
	if err != nil {
		return nil, errNoDocker
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err = engine.do(ctx, "GET", "/_ping", nil, nil)
	cancel()
	if err != nil {
		return nil, errNoDocker
	}

	image := os.Getenv("DSYNC_MONGOTEST_MONGO_IMAGE")
	if image == "" {
		image = defaultMongoImage
	}
	repo, tag := image, "latest"
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo, tag = image[:i], image[i+1:]
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	create := map[string]any{
		"Image": repo + ":" + tag,
		// `timeout` makes a container left behind by a crashed test binary
		// stop (and, with AutoRemove, vanish) after an hour.
		"Entrypoint":   []string{"timeout", "3600", "docker-entrypoint.sh"},
		"Cmd":          []string{"mongod", "--replSet", "rs0", "--bind_ip_all"},
		"Labels":       map[string]string{"dsync.mongotest": "1"},
		"ExposedPorts": map[string]any{"27017/tcp": map[string]any{}},
		"HostConfig": map[string]any{
			"AutoRemove":      true,
			"RestartPolicy":   map[string]string{"Name": "no"},
			"PublishAllPorts": true,
		},
	}
	var created struct{ Id string }
	status, err := engine.do(ctx, "POST", "/containers/create", create, &created)
	if status == http.StatusNotFound { // no such image: pull it, then retry
		q := url.Values{"fromImage": {repo}, "tag": {tag}}
		if _, err = engine.do(ctx, "POST", "/images/create?"+q.Encode(), nil, nil); err == nil {
			_, err = engine.do(ctx, "POST", "/containers/create", create, &created)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", image, err)
	}
	d := &dockerServer{engine: engine, id: created.Id, image: image}
	if _, err := engine.do(ctx, "POST", "/containers/"+d.id+"/start", nil, nil); err != nil {
		_ = d.stop()
		return nil, fmt.Errorf("run %s: %w", image, err)
	}
	var inspect struct {
		NetworkSettings struct {
			Ports map[string][]struct{ HostIp, HostPort string }
		}
	}
	if _, err := engine.do(ctx, "GET", "/containers/"+d.id+"/json", nil, &inspect); err != nil {
		_ = d.stop()
		return nil, fmt.Errorf("inspect %s: %w", image, err)
	}
	var hostPort string
	for _, b := range inspect.NetworkSettings.Ports["27017/tcp"] {
		if b.HostPort != "" {
			hostPort = net.JoinHostPort(engine.host, b.HostPort)
			break
		}
	}
	if hostPort == "" {
		_ = d.stop()
		return nil, fmt.Errorf("run %s: port 27017 not published", image)
	}
	d.uri = "mongodb://" + hostPort + "/?directConnection=true"
	if err := initReplicaSet(d.uri, replSetTimeout); err != nil {
		_ = d.stop()
		return nil, fmt.Errorf("replica set in %s: %w", image, err)
	}
	return d, nil
}

// replSetTimeout bounds the wait for the container's mongod to become a
// writable primary (tests shorten it).
var replSetTimeout = 90 * time.Second

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

// stop removes the container (and its anonymous volumes), by force.
func (d *dockerServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	status, err := d.engine.do(ctx, "DELETE", "/containers/"+d.id+"?force=1&v=1", nil, nil)
	if status == http.StatusNotFound {
		return nil // AutoRemove got there first
	}
	return err
}
