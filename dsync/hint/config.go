package hint

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
)

// Config configures a Feed.
type Config struct {
	// Listen is the UDP address hints are received on, host:port: a port
	// of 0 picks a free one. Required.
	Listen string
	// Advertise is the address other processes send hints to, host:port,
	// recorded in the store: the address at which this process is reached
	// from the others (a pod's IP, a host port mapped to a container's).
	// A port of 0 takes the port listened on. Empty: the Listen address
	// with the port listened on, which needs a host that is not
	// unspecified (not "", 0.0.0.0 or ::).
	Advertise string
	// Rate is how many hints a second this process acts upon at most, on
	// average, and Burst how many at once: each can cost a read of the
	// store. Defaults: DefaultRate, DefaultBurst.
	Rate  float64
	Burst int
	// Logger receives what goes wrong with hints (Debug: a hint dropped).
	// Default: slog.Default().
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultRate  = 200
	DefaultBurst = 100
)

// check checks the addresses' form (it resolves nothing) and fills in
// the defaults.
func (c *Config) check() error {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("hint: listen address %q: %w", c.Listen, err)
	}
	if c.Advertise == "" && unspecified(host) {
		return fmt.Errorf("hint: listen address %q names no host others can reach: give an advertise address", c.Listen)
	}
	if c.Advertise != "" {
		ahost, _, err := net.SplitHostPort(c.Advertise)
		if err != nil {
			return fmt.Errorf("hint: advertise address %q: %w", c.Advertise, err)
		}
		if unspecified(ahost) {
			return fmt.Errorf("hint: advertise address %q names no host", c.Advertise)
		}
	}
	if c.Rate < 0 || c.Burst < 0 {
		return errors.New("hint: rate and burst must not be negative")
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}
