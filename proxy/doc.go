// Package proxy is `weir proxy`: a gRPC forwarder that listens on
// loopback, without TLS or token, and forwards every call to a `weir
// serve` that requires them, adding them. It exists because Beam's SDK
// clients (Go's universal runner, Python's PortableRunner, Java's
// PortableRunner) dial job services and expansion services in plaintext
// and send no token (docs/security.md has the evidence); pointed at the
// proxy instead, they reach a secured server unchanged. The in-process
// runner (--runner=weir with --endpoint and WEIR_TLS_* / WEIR_TOKEN*)
// starts one for its own submissions.
//
// # What is forwarded
//
// Any method of any service: the proxy registers none, and gRPC's
// UnknownServiceHandler hands it every call, whose messages it moves as
// bytes (a codec that does not decode them). Beam's ExpansionService goes
// to the expansion upstream; everything else (JobService, the artifact
// staging service, weir's own savepoint and job services) to the job
// upstream. Metadata the client sent goes along, but its own
// authorization: the upstream connection adds the proxy's token.
//
// One message is read: Prepare's response names the artifact staging
// endpoint, the server's own address. The proxy writes its own address
// there (the one the client reached it at), so that staging, too, goes
// through it.
//
// # One call
//
//	open a stream upstream, same method, same metadata (less authorization)
//	goroutine: client -> upstream, message by message; CloseSend at the client's end
//	this goroutine: upstream -> client; the header before the first message;
//	                the upstream's trailer and status at its end
//
// The call ends when the upstream ends it. A client that fails mid-stream
// cancels the upstream call. The client-to-upstream goroutine belongs to
// the call: it returns once gRPC ends the call's stream.
package proxy
