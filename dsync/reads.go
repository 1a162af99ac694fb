package dsync

import (
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// Package statuspage reads a Client's store for people, and package
// leader its election's queue, with clienthook.ClientReads: the reads
// are the Client's (they need its engine and state), their API is
// statuspage's, so that the lock package exports only the locks'.
func init() {
	clienthook.ClientReads = clienthook.Reads[*Client, driver.Revocation, driver.Stall]{
		Queue: (*Client).queueOf, List: (*Client).list, HasKey: (*Client).hasKey, ListOrder: (*Client).listOrder,
		Revocations: (*Client).revocations, Stalls: (*Client).stalls, Compact: (*Client).compact, Roles: func(c *Client) any { return c.roles },
	}
}
