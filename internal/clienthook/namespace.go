package clienthook

// Elections is the dsync.MutexOption that puts a Mutex in package
// leader's namespace ("election"), where its leases live and which
// dsync.WithNamespace refuses to users (a user's Mutex there would share
// keys with the leases). Package dsync sets it as it is initialized, so
// before any package that imports dsync runs; package leader asserts it
// to dsync.MutexOption. It is an any because this package cannot import
// dsync, and internal, so that only dsync's own packages can reach it.
var Elections any

// StoreTime is a func(*dsync.Client) time.Time that returns the earliest
// the store's time can be now, as the Client knows it (the store's
// ServerTime): package leader times a preemption's delay from a claim's
// QueuedAt by it. Package dsync sets it as it is initialized, as it does
// Elections.
var StoreTime any

// NamespacedKey is key in namespace ns (dsync.WithNamespace), as it is
// stored: "dsync:NS/KEY". dsync stores its namespaced keys by it, package
// leader names its leases by it (operator.LockKey) and package statuspage
// exports it, so that the three spell a stored key alike.
func NamespacedKey(ns, key string) string { return "dsync:" + ns + "/" + key }
