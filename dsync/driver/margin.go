package driver

import "time"

// MarginDivisor sets the lease's safety margin as a part of its TTL. A
// holder stops trusting its hold TTL/MarginDivisor before the expiry the
// store gives it, TTL after the server time of the renewal's send. The
// margin covers the holder's clock running slower than the server's (500
// ppm is the usual worst case; 5% leaves ample room) and the scheduling
// delay between that deadline and the holder's Lost being observed.
const MarginDivisor = 20

// Margin is the safety margin of a lease of ttl: ttl/MarginDivisor. A
// hold confirmed by a renewal sent at t is trusted until t + ttl −
// Margin(ttl) on the holder's clock.
func Margin(ttl time.Duration) time.Duration { return ttl / MarginDivisor }
