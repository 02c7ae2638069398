package runner

import "testing"

// skipOnBeamDataRace skips t under -race when what it does breaks a
// LOOPBACK worker's data stream mid-bundle (a kill, a cancel, a panic in
// the data handler). The workers run in this binary, and the Beam Go SDK's
// harness then calls Recv on the broken stream from a bundle's writer
// (dataWriter.send, for the stream's error) while its reader goroutine is
// in Recv too, or closes its response channel while a bundle's goroutine
// sends on it: races in Beam, which the detector charges to the test.
// The plain pass of make test runs these tests.
func skipOnBeamDataRace(t *testing.T, what string) {
	t.Helper()
	if raceEnabled {
		t.Skip(what + " breaks a LOOPBACK worker's data stream: the Beam Go SDK's harness then races on it; runs without -race")
	}
}
