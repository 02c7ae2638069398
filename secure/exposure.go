package secure

import "fmt"

// Exposure is the decision about one listener at startup (CheckExposure).
type Exposure struct {
	// Refuse, if set, is why the listener must not start.
	Refuse error
	// Warning, if set, is a line for the log: the listener starts, but
	// something about it is weak.
	Warning string
}

// CheckExposure decides whether a listener called what may listen on addr
// under policy p. A listener on loopback may do anything. One reachable
// from the network must authenticate its clients (a token or client
// certificates) unless insecure (the operator's --insecure) says
// otherwise (Redis' protected mode refuses outside connections without a
// password; Docker's daemon deprecates, and delays, a TCP socket without
// --tlsverify); an open one then logs a warning. A token without TLS
// starts with a warning: it travels in clear, which is right only where
// something else (a mesh, a tunnel) encrypts.
func CheckExposure(what, addr string, p *Policy, insecure bool) Exposure {
	if IsLoopback(addr) {
		return Exposure{}
	}
	switch {
	case !p.Authenticates() && !insecure:
		return Exposure{Refuse: fmt.Errorf("the %s would listen on %s, reachable from the network, and let anyone in: "+
			"give --auth-token-file, or --tls-client-ca (with --tls-cert and --tls-key), or --insecure to serve it open "+
			"(a trusted network, a mesh that authenticates); see docs/security.md", what, addr)}
	case !p.Authenticates():
		return Exposure{Warning: fmt.Sprintf("the %s on %s is reachable from the network and lets anyone in (--insecure)", what, addr)}
	case !p.Encrypts():
		return Exposure{Warning: fmt.Sprintf("the %s on %s is reachable from the network without TLS: its token travels in clear (give --tls-cert and --tls-key unless something else encrypts)", what, addr)}
	}
	return Exposure{}
}
