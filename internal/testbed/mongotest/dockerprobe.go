package mongotest

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// dockerPingTimeout bounds the probe: an engine that is there answers at
// once, and a machine without one must not wait.
const dockerPingTimeout = 1500 * time.Millisecond

// dockerAnswers says whether a Docker engine answers at DOCKER_HOST (else
// the local socket), before the harness builds dockerserver for it. Over
// a unix socket or plain TCP it asks for /_ping; over TLS it only
// connects, and dockerserver (which reads DOCKER_CERT_PATH) pings.
func dockerAnswers() bool {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	u, err := url.Parse(host)
	if err != nil {
		return false
	}
	network, addr := "tcp", u.Host
	switch u.Scheme {
	case "unix":
		network, addr = "unix", u.Path
		if addr == "" {
			addr = u.Host
		}
		if _, err := os.Stat(addr); err != nil {
			return false
		}
	case "tcp", "http":
	case "https":
		return dials(network, addr)
	default:
		return true // npipe and the like: let dockertest try
	}
	if os.Getenv("DOCKER_TLS_VERIFY") != "" || (u.Scheme == "tcp" && os.Getenv("DOCKER_CERT_PATH") != "") {
		return dials(network, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerPingTimeout)
	defer cancel()
	// No keep-alives: no connection (and no goroutine) outlives the ping,
	// so goleak stays clean.
	hc := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://docker/_ping", nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func dials(network, addr string) bool {
	c, err := net.DialTimeout(network, addr, dockerPingTimeout)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
