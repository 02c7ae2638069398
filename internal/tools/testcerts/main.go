// Command testcerts writes a fresh certificate authority, a server
// certificate for localhost and the loopback addresses, and client
// certificates into a folder, for the scripts that test weir's transport
// security (python/, java/):
//
//	go run ./internal/tools/testcerts DIR
//
// It prints nothing; the files are those of securetest.Files: ca.pem,
// server.pem, server-key.pem, client.pem, client-key.pem, and a client
// pair (other-client*.pem) under other-ca.pem, an authority the server
// does not trust. They are valid for a day.
package main

import (
	"fmt"
	"os"

	"github.com/weir-runner/weir/secure/securetest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testcerts DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(os.Args[1], 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "testcerts:", err)
		os.Exit(1)
	}
	if _, err := securetest.Write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "testcerts:", err)
		os.Exit(1)
	}
}
