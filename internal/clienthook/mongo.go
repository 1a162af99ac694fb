package clienthook

// MongoReadRuns makes store, a *dsyncmongo.Store not yet in use (an any:
// this package cannot name it), read runs of a key's queue
// (driver.RunReader) on FerretDB too, where it answers
// driver.ErrRunsUnsupported because FerretDB decodes the whole collection
// for such a find: slower, but the same find and the same order, so that
// the integration suite's workers, which run on the embedded FerretDB,
// walk queues by runs under its faults. Package dsyncmongo installs it
// (nil in a program that does not link dsyncmongo).
var MongoReadRuns func(store any)
