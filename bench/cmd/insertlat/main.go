// Command insertlat shows how the inserts of the bench's floor (the
// floor scenario: dsyncbench's floor.go) are spread: N connections, each
// inserting one small document at a time with the majority write concern
// for 5 s, then the count, percentiles, a histogram of the latencies and
// the slowest 2%. On the embedded server (SQLite) the slow inserts of
// concurrent connections fall in clusters at SQLite's busy-handler
// schedule (bench/floor.md).
//
// Usage:
//
//	insertlat MONGODB_URI CONNECTIONS
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: insertlat MONGODB_URI CONNECTIONS")
		os.Exit(2)
	}
	uri := os.Args[1]
	conns, err := strconv.Atoi(os.Args[2])
	if err != nil || conns < 1 {
		fmt.Fprintln(os.Stderr, "insertlat: CONNECTIONS must be a positive number")
		os.Exit(2)
	}
	ctx := context.Background()
	var lat []float64
	var mu sync.Mutex
	var wg sync.WaitGroup
	name := fmt.Sprintf("insertlat%d", time.Now().UnixNano())
	until := time.Now().Add(5 * time.Second)
	for c := range conns {
		cl, err := mongo.Connect(options.Client().ApplyURI(uri).SetMaxPoolSize(1))
		if err != nil {
			fmt.Fprintln(os.Stderr, "insertlat:", err)
			os.Exit(1)
		}
		defer cl.Disconnect(ctx)
		coll := cl.Database("insertlat").Collection(name, options.Collection().SetWriteConcern(writeconcern.Majority()))
		defer coll.Drop(ctx)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprint(c, "warm")}}); err != nil {
			fmt.Fprintln(os.Stderr, "insertlat:", err)
			os.Exit(1)
		}
		wg.Go(func() {
			for i := 0; time.Now().Before(until); i++ {
				a := time.Now()
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprint(c, "@", i)}, {Key: "n", Value: i}}); err != nil {
					fmt.Fprintln(os.Stderr, "insertlat:", err)
					os.Exit(1)
				}
				mu.Lock()
				lat = append(lat, float64(time.Since(a).Microseconds())/1000)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Float64s(lat)
	fmt.Printf("n=%d p50=%.2f p90=%.2f p99=%.2f max=%.1f\n", len(lat), lat[len(lat)/2], lat[len(lat)*9/10], lat[len(lat)*99/100], lat[len(lat)-1])
	// The histogram (ms), then the slowest 2%.
	bins := []float64{2, 4, 6, 10, 15, 20, 25, 30, 40, 50, 60, 80, 100, 150, 200, 1e9}
	cnt := make([]int, len(bins))
	for _, v := range lat {
		for i, b := range bins {
			if v < b {
				cnt[i]++
				break
			}
		}
	}
	for i, b := range bins {
		fmt.Printf("<%g:%d ", b, cnt[i])
	}
	fmt.Println()
	var slow []string
	for _, v := range lat[len(lat)*98/100:] {
		slow = append(slow, fmt.Sprintf("%.1f", v))
	}
	fmt.Println(slow)
}
