package clienthook

// OwnNamespace names one of dsync's own namespaces, which
// dsync.WithNamespace refuses to users (a user's Mutex there would share
// keys with dsync's own): dsync.InOwnNamespace takes one. Its field is
// unexported and the package internal, so only dsync's own packages can
// make one.
type OwnNamespace struct{ name string }

// Name is the namespace's name.
func (n OwnNamespace) Name() string { return n.name }

// Elections is package leader's namespace, where its leases live.
func Elections() OwnNamespace { return OwnNamespace{"election"} }
