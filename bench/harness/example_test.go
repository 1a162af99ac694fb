package harness_test

import (
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"github.com/go-dsync/dsync/bench/harness"
)

// A driver feeds its client's Meter: its connections wrapped with Conn
// count the bytes, and its command hook reports each command. A scenario
// reads the difference of two Snapshots around what it measures.
func ExampleMeter() {
	m := harness.NewMeter()
	client, server := net.Pipe()
	go func() { // the server: answers "pong" to "ping"
		buf := make([]byte, 4)
		if _, err := io.ReadFull(server, buf); err == nil {
			server.Write([]byte("pong"))
		}
		server.Close()
	}()
	conn := m.Conn(client)
	defer conn.Close()

	before := m.Snapshot()
	if _, err := conn.Write([]byte("ping")); err != nil {
		log.Fatal(err)
	}
	reply := make([]byte, 4)
	if _, err := io.ReadFull(conn, reply); err != nil {
		log.Fatal(err)
	}
	m.Command("ping", time.Millisecond, false)
	fmt.Printf("%+v\n", m.Snapshot().Sub(before))
	fmt.Println(m.ByName())
	// Output:
	// {Commands:1 BytesOut:4 BytesIn:4}
	// map[ping:1]
}

// The figures the results report of a set of latencies (ms), and how
// evenly five workers shared the acquisitions.
func ExamplePercentile() {
	latencies := []float64{1.2, 0.9, 1.1, 7.5, 1.0, 1.3, 0.8, 1.0, 1.4, 12.0}
	fmt.Println("p50:", harness.Percentile(latencies, 50), "median:", harness.Median(latencies))
	fmt.Println("p90:", harness.Percentile(latencies, 90), "p99:", harness.Percentile(latencies, 99))
	fmt.Printf("fairness, even: %.2f, one takes all: %.2f\n",
		harness.Jain([]float64{20, 20, 20, 20, 20}), harness.Jain([]float64{100, 0, 0, 0, 0}))
	// Output:
	// p50: 1.1 median: 1.15
	// p90: 7.5 p99: 12
	// fairness, even: 1.00, one takes all: 0.20
}
