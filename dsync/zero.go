package dsync

// A Mutex, RWMutex, Semaphore or Once declared rather than made by its
// New function has no Client, no key and no local lock: there is nothing
// it could do. Every method of such a zero value (or of a nil pointer to
// one) panics at once, naming the New function, as other misuse of a
// primitive panics. Even the methods that only report (Key, Token, Lost)
// panic rather than return zero results: a zero value is always a bug, and
// a Token of 0 or a closed Lost channel would hide it until later.

// zeroPanic is the panic of every method of a zero value of the named
// primitive.
func zeroPanic(kind string) {
	panic("dsync: " + kind + " used without New" + kind)
}
