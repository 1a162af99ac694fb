// Package fencehttp keeps package fence's contract for a resource behind an
// HTTP service. It stops a holder whose hold has ended, not a client that
// lies, nor writes made after a handler returns (see What the fence does
// not cover, below).
//
// The holder's client carries the key and the token with each request.
// The service admits each request through a mark store before its handler
// runs.
//
// On the holder's side, a Transport in an http.Client sets KeyHeader and
// TokenHeader on every request. Stale tells a refusal from any other
// response. On the service's side, Handler wraps the handler that writes.
// It reads the two headers, and calls the store's Admit, which raises the
// key's mark to the token, or refuses a token below it. It then runs the
// handler, and ends the admission when the handler returns.
//
// While a request of a key is admitted, every other request of that key
// waits. So a raise and the handler's writes are one step to every other
// holder of the key. A write that a handler makes while it runs applies
// only under a token at least the key's mark. A stale holder's request,
// however late it arrives, is answered 409 Conflict before its handler
// runs, having changed nothing. A token equal to the mark is admitted: a
// hold may send many requests, and retry one.
//
// A request that is not admitted never reaches the handler, and its body
// is not read. It is answered:
//   - 428 Precondition Required for a missing header;
//   - 400 Bad Request for a malformed one;
//   - 409 Conflict for a stale token (with MarkHeader, the token accepted
//     first, when the store tells it);
//   - 503 Service Unavailable when the store fails.
//
// Every method is fenced, reads (GET, HEAD) too: a holder shows its token
// before it reads what it will write from.
//
// Handler has the shape of net/http's own wrappers (http.StripPrefix,
// http.TimeoutHandler: a handler in, a handler out). A router whose
// middleware is a func(http.Handler) http.Handler takes a closure over
// the marks.
//
// # The mark store
//
// fence.Memory keeps the marks in the service's memory: for a service
// of one instance. Its marks are lost when the process ends, and a
// service of several instances behind a load balancer has several
// unrelated sets of marks, so a stale holder's request that reaches
// another instance than the next holder's is admitted. A service of
// several instances, or one whose restart may come between two holders'
// writes, keeps its marks in the database they share: the Marks of
// package fence/fencesql. Any fence.Marks will do.
//
// # What the fence does not cover
//
// The headers are the client's claim: the fence stops a holder whose
// hold has ended, not a client that lies; authenticate clients as for
// any other request. A handler writes only what its key names (Token
// tells it the key), and only while it runs: writes left to a goroutine
// or a queue after it returns are not fenced.
package fencehttp
