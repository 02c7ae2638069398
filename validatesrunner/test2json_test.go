package validatesrunner

import (
	"reflect"
	"strings"
	"testing"
)

// A trimmed `go test -json` stream: a passing test, a failing test with a
// failing subtest and a multi-line t.Fatalf, a skipped test, an example, a
// test still running when the stream ends, and a test whose output line is
// split across two events.
const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"time=x level=INFO msg=\"Submitted job: job-001\"\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.77s)\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.77}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"run","Package":"p","Test":"TestB/sub_1"}
{"Action":"output","Package":"p","Test":"TestB/sub_1","Output":"=== RUN   TestB/sub_1\n"}
{"Action":"output","Package":"p","Test":"TestB/sub_1","Output":"time=x level=INFO msg=\"noise\"\n"}
{"Action":"output","Package":"p","Test":"TestB/sub_1","Output":"    b_test.go:12: Failed to execute job: job failed\n"}
{"Action":"output","Package":"p","Test":"TestB/sub_1","Output":"        \tcaused by: no such URN\n"}
{"Action":"output","Package":"p","Test":"TestB/sub_1","Output":"        \tmore\n"}
{"Action":"output","Package":"p","Test":"TestB/sub_1","Output":"        \tand more\n"}
{"Action":"output","Package":"p","Test":"TestB/sub_1","Output":"    --- FAIL: TestB/sub_1 (1.50s)\n"}
{"Action":"fail","Package":"p","Test":"TestB/sub_1","Elapsed":1.5}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (2.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestB","Elapsed":2}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Test":"TestC","Output":"=== RUN   TestC\n"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:5: Only Loopback mode is supported\n"}
{"Action":"output","Package":"p","Test":"TestC","Output":"--- SKIP: TestC (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestC"}
{"Action":"run","Package":"p","Test":"ExampleD"}
{"Action":"output","Package":"p","Test":"ExampleD","Output":"--- FAIL: ExampleD (0.25s)\n"}
{"Action":"output","Package":"p","Test":"ExampleD","Output":"got:\n"}
{"Action":"output","Package":"p","Test":"ExampleD","Output":"the quick brown"}
{"Action":"output","Package":"p","Test":"ExampleD","Output":" fox\n"}
{"Action":"output","Package":"p","Test":"ExampleD","Output":"want:\n"}
{"Action":"output","Package":"p","Test":"ExampleD","Output":"the lazy dog\n"}
{"Action":"fail","Package":"p","Test":"ExampleD"}
{"Action":"run","Package":"p","Test":"TestE"}
{"Action":"output","Package":"p","Test":"TestE","Output":"=== RUN   TestE\n"}
not json: some build noise
{"Action":"output","Package":"p","Output":"FAIL\n"}
`

func TestCollector(t *testing.T) {
	c := NewCollector()
	if err := c.ParseEvents(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	c.AddConn(c.Current()) // a connection made while TestE runs
	if got, want := c.Running(), []string{"TestE"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Running() = %v, want %v", got, want)
	}
	if c.Finished() {
		t.Errorf("Finished() = true before the package event")
	}
	c.AddLine([]byte(`{"Action":"fail","Package":"p","Elapsed":3}`))
	if !c.Finished() {
		t.Errorf("Finished() = false after the package event")
	}
	c.MarkFailed("TestE", "vr: killed by the watchdog", 300)

	got := c.Results()
	want := []TestResult{
		{Name: "TestA", Status: Pass, Seconds: 0.77},
		{Name: "TestB", Status: Fail, Seconds: 2,
			Reason:         "b_test.go:12: Failed to execute job: job failed | … | more | and more",
			FailedSubtests: []string{"TestB/sub_1"},
			Tail: []string{
				"time=x level=INFO msg=\"noise\"",
				"    b_test.go:12: Failed to execute job: job failed",
				"        \tcaused by: no such URN",
				"        \tmore",
				"        \tand more",
			}},
		{Name: "TestC", Status: Skip, Reason: "c_test.go:5: Only Loopback mode is supported",
			Tail: []string{"    c_test.go:5: Only Loopback mode is supported"}},
		{Name: "ExampleD", Status: Fail, Seconds: 0.25, Reason: "the lazy dog",
			Tail: []string{"got:", "the quick brown fox", "want:", "the lazy dog"}},
		{Name: "TestE", Status: Fail, Seconds: 300, Conns: 1, Reason: "vr: killed by the watchdog",
			Tail: []string{"vr: killed by the watchdog"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Results() mismatch\n got: %+v\nwant: %+v", got, want)
	}
	if out := c.PackageOutput(); !reflect.DeepEqual(out, []string{"not json: some build noise", "FAIL"}) {
		t.Errorf("PackageOutput() = %q", out)
	}
}

func TestCollectorConnsAndElapsedFallback(t *testing.T) {
	c := NewCollector()
	c.AddLine([]byte(`{"Action":"run","Package":"p","Test":"TestX"}`))
	c.AddConn(c.Current())
	c.AddConn(c.Current())
	c.AddLine([]byte(`{"Action":"output","Package":"p","Test":"TestX","Output":"--- PASS: TestX (1.234s)\n"}`))
	c.AddLine([]byte(`{"Action":"pass","Package":"p","Test":"TestX"}`)) // no Elapsed
	c.AddConn(c.Current())                                              // nothing running: dropped
	got := c.Results()
	want := []TestResult{{Name: "TestX", Status: Pass, Seconds: 1.23, Conns: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Results() = %+v, want %+v", got, want)
	}
	if d := c.Done(); !d["TestX"] || len(d) != 1 {
		t.Errorf("Done() = %v", d)
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("a\n  b\tc ", 100); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
	if got := OneLine("abcdefgh", 5); got != "abcd…" {
		t.Errorf("OneLine truncation = %q", got)
	}
}
