//go:build race

package runner

// raceEnabled says the test binary runs under the race detector.
const raceEnabled = true
