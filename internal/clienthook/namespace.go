package clienthook

// Namespace returns a dsync.Option (typed any) that puts a Mutex's key
// in ns, one of dsync's own namespaces, which dsync.WithNamespace refuses
// to users (a user's Mutex there would share keys with dsync's own):
// package leader claims its leases in "election" with it. Package dsync
// sets it when it is initialized.
var Namespace func(ns string) any
