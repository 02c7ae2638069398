package validatesrunner

import (
	"context"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRunPackage runs the fake test package in testdata/fakesuite through
// the harness against a stand-in job server (a TCP listener), checking
// results, reasons, connection counting, the hang watchdog and crash
// recovery.
func TestRunPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test binary")
	}
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("x"))
			c.Close()
		}
	}()

	dir := t.TempDir()
	o := &Options{
		Go:          "go",
		BinDir:      dir,
		TmpDir:      dir,
		Endpoint:    l.Addr().String(),
		Args:        []string{"--runner=universal", "--environment_type=LOOPBACK"},
		TestTimeout: 3 * time.Second,
		PkgTimeout:  time.Minute,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pr := RunPackage(ctx, o, Selection{Package: "fakesuite", Import: "./testdata/fakesuite"})

	wantListed := []string{"TestPass", "TestDial", "TestFail", "TestSkip", "TestHang", "TestAfterHang", "TestCrash", "TestAfterCrash"}
	if !reflect.DeepEqual(pr.Listed, wantListed) {
		t.Errorf("Listed = %v, want %v", pr.Listed, wantListed)
	}
	type brief struct {
		Status string
		Conns  int
	}
	got := map[string]brief{}
	reasons := map[string]string{}
	for _, r := range pr.Tests {
		got[r.Name] = brief{r.Status, r.Conns}
		reasons[r.Name] = r.Reason
	}
	want := map[string]brief{
		"TestPass":       {Pass, 0},
		"TestDial":       {Pass, 2},
		"TestFail":       {Fail, 0},
		"TestSkip":       {Skip, 0},
		"TestHang":       {Fail, 1},
		"TestAfterHang":  {Pass, 1},
		"TestCrash":      {Fail, 0},
		"TestAfterCrash": {Pass, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results = %v\nwant %v", got, want)
	}
	for name, sub := range map[string]string{
		"TestFail":  "boom: job failed",
		"TestSkip":  "not here",
		"TestHang":  "killed by the watchdog",
		"TestCrash": "test process ended",
	} {
		if !strings.Contains(reasons[name], sub) {
			t.Errorf("%s reason = %q, want it to contain %q", name, reasons[name], sub)
		}
	}
	if !strings.Contains(pr.Error, "TestHang hung") || pr.Restart != 2 {
		t.Errorf("Error = %q, Restart = %d; want a hang note and 2 restarts", pr.Error, pr.Restart)
	}
}
