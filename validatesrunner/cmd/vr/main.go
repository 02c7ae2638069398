// Command vr runs Beam's ValidatesRunner-style Go test packages against a
// Beam job server in strict mode and reports per-test results.
//
//	vr -runner weir  -server 'bin/weir serve --job-port={port}' -expect validatesrunner/expected.txt
//	vr -runner prism -server 'bin/prism --job_port={port} --serve_http=false'
//	vr -runner weir  -server '...' -suite smoke -expect validatesrunner/expected.txt
//	vr -render-only
//
// See validatesrunner/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	vr "github.com/weir-runner/weir/validatesrunner"
)

var (
	runnerName   = flag.String("runner", "", "name of the runner under test (weir, prism); names the results files")
	serverCmd    = flag.String("server", "", "job server command line, {port} is replaced by a free port; split on spaces, no quoting")
	endpoint     = flag.String("endpoint", "", "use an already running job server at host:port instead of -server")
	suite        = flag.String("suite", "full", "full or smoke")
	only         = flag.String("only", "", "comma-separated packages (e.g. primitives,passert) to run; a partial run updates results/ and RESULTS.md only with -merge")
	runFilter    = flag.String("run", "", "run only the top-level tests matching this regexp (Go -run syntax); a partial run")
	expectPath   = flag.String("expect", "", "expectation file to compare with (expected.txt); empty: no comparison")
	merge        = flag.Bool("merge", false, "with -only or -run: replace the rows of the tests this partial run ran in results/<runner>.json, the last full run's snapshot, and re-render RESULTS.md (the run is listed there as a re-run)")
	update       = flag.Bool("update-expectations", false, "rewrite the -expect file from this run (passes become pass; failures keep their reason, new ones get \"TODO: investigate\")")
	jobs         = flag.Int("jobs", 1, "test packages run at once (go test -p)")
	testTimeout  = flag.Duration("test-timeout", 2*time.Minute, "kill a top-level test that runs longer than this and go on with the rest")
	pkgTimeout   = flag.Duration("pkg-timeout", 60*time.Minute, "-test.timeout for each test process")
	drainAfter   = flag.Duration("drain-after", vr.DefaultDrainAfter, "how long the job of a test that needs a drain (DrainTests in suite.go: TestDrain) runs before the harness drains it through JobService.Drain")
	serverWait   = flag.Duration("server-wait", 60*time.Second, "how long to wait for the job server port")
	outDir       = flag.String("out", "validatesrunner/out", "directory for full results, server logs, binaries (gitignored)")
	resultsDir   = flag.String("results", "validatesrunner/results", "directory of the committed per-runner snapshots RESULTS.md is rendered from")
	mdPath       = flag.String("md", "validatesrunner/RESULTS.md", "RESULTS.md to render after a full run (empty: do not render)")
	columns      = flag.String("columns", "weir,prism", "runners shown side by side in RESULTS.md")
	renderOnly   = flag.Bool("render-only", false, "only re-render RESULTS.md from the snapshots")
	goCmd        = flag.String("go", "go", "go command")
	keepBins     = flag.Bool("keep-bins", false, "keep the test binaries in -out/bin")
	javaImport   = flag.String("java-import", "", "import Surefire's reports of a Java suite run (java/vr.sh) from this directory, check them against -java-known, render RESULTS.md")
	javaExcluded = flag.String("java-excluded", "", "with -java-import: the tests the run left out by category (Class#method<TAB>Category lines)")
	javaKnown    = flag.String("java-known", "", "with -java-import: the runner's known failures (Class#method<TAB>reason lines)")
	javaName     = flag.String("java-name", "", "with -java-import: a narrowed run's name; it is kept in -out, not in -results, and RESULTS.md is not rendered")
	javaSeconds  = flag.Float64("java-seconds", 0, "with -java-import: the run's wall time")
	javaBeam     = flag.String("java-beam", "", "with -java-import: the Beam Java version the tests came from")
	extraArgs    = flag.String("args", "", "extra flags for the test binaries, after --runner/--endpoint/--environment_type (space separated)")
)

func main() {
	flag.Parse()
	os.Exit(run())
}

func run() int {
	if *javaImport != "" {
		return importJava()
	}
	if *renderOnly {
		if err := render(); err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			return 2
		}
		return 0
	}
	if *runnerName == "" || (*serverCmd == "") == (*endpoint == "") {
		fmt.Fprintln(os.Stderr, "vr: need -runner and exactly one of -server or -endpoint")
		flag.Usage()
		return 2
	}
	sels, err := vr.Suite(*suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vr:", err)
		return 2
	}
	partial := *only != "" || *runFilter != ""
	if *merge && (!partial || *suite != "full") {
		fmt.Fprintln(os.Stderr, "vr: -merge merges a partial run of the full suite: it needs -only or -run, and -suite full")
		return 2
	}
	if *only != "" {
		sels = vr.FilterSuite(sels, *only)
		if len(sels) == 0 {
			fmt.Fprintf(os.Stderr, "vr: -only %q matches no package of suite %s\n", *only, *suite)
			return 2
		}
	}
	if *runFilter != "" {
		sels = append([]vr.Selection(nil), sels...)
		for i := range sels {
			sels[i].Run = *runFilter
		}
	}
	var exp *vr.Expectations
	if *expectPath != "" {
		if exp, err = vr.LoadExpectations(*expectPath); err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			return 2
		}
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	name := *runnerName
	if *suite != "full" {
		name += "-" + *suite
	}
	if partial {
		name += "-partial"
	}
	started := time.Now().UTC()
	res := &vr.Run{
		Runner:    *runnerName,
		Suite:     *suite,
		Started:   started.Format("2006-01-02 15:04"),
		GoVersion: runtime.Version(),
		Beam:      beamVersion(),
		Jobs:      *jobs,
	}
	if partial {
		res.Suite += fmt.Sprintf(" (partial: -only %q -run %q)", *only, *runFilter)
	}
	absOut, _ := filepath.Abs(*outDir)
	o := &vr.Options{
		Go:          *goCmd,
		BinDir:      filepath.Join(absOut, "bin", name),
		TmpDir:      filepath.Join(absOut, "tmp", name),
		TestTimeout: *testTimeout,
		PkgTimeout:  *pkgTimeout,
		KeepBins:    *keepBins,
		ServerWait:  *serverWait,
		Log:         os.Stderr,
		DrainAfter:  *drainAfter,
	}
	defer os.RemoveAll(o.TmpDir)

	ep := *endpoint
	if *serverCmd != "" {
		port, err := vr.FreePort()
		if err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			return 2
		}
		o.Server = &vr.Server{Template: *serverCmd, Port: port, LogPath: filepath.Join(absOut, name+"-server.log")}
		res.Server = strings.Join(o.Server.Argv(), " ")
		fmt.Fprintf(os.Stderr, "vr: starting job server: %s (log %s)\n", res.Server, o.Server.LogPath)
		if err := o.Server.Start(ctx, *serverWait); err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			for _, s := range sels {
				res.Packages = append(res.Packages, vr.PackageResult{Package: s.Package, Filter: s.Run, Error: "job server did not start: " + vr.OneLine(err.Error(), 400)})
			}
			return finish(res, sels, exp, name, started, partial, false)
		}
		defer o.Server.Stop()
		ep = o.Server.Endpoint()
	} else {
		res.Server = ep
	}
	o.Endpoint = ep
	o.Args = append([]string{"--runner=universal", "--environment_type=LOOPBACK"}, strings.Fields(*extraArgs)...)
	res.Args = append([]string{"--runner=universal", "--endpoint=localhost:PORT", "--environment_type=LOOPBACK"}, strings.Fields(*extraArgs)...)

	// Run the packages, -jobs at a time, keeping suite order in the results.
	results := make([]vr.PackageResult, len(sels))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, *jobs))
	for i, s := range sels {
		wg.Add(1)
		sem <- struct{}{} // start packages in suite order
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pr := vr.RunPackage(ctx, o, s)
			var c vr.Counts
			for _, t := range pr.Tests {
				c.Add(t)
			}
			msg := ""
			if pr.Error != "" {
				msg = " [" + vr.OneLine(pr.Error, 200) + "]"
			}
			fmt.Fprintf(os.Stderr, "vr: %s: %d pass, %d fail, %d skip in %.0fs%s\n", s.Package, c.Pass, c.Fail, c.Skip, pr.Seconds, msg)
			results[i] = pr
		}()
	}
	wg.Wait()
	res.Packages = results
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "vr: interrupted; results are incomplete: no snapshot, RESULTS.md or expectation update")
		return finish(res, sels, exp, name, started, true, false)
	}
	return finish(res, sels, exp, name, started, partial, true)
}

// finish saves results, renders RESULTS.md after a complete full run, and
// compares with the expectations. It returns the exit code. ran is false
// when the suite could not run to completion (job server did not start,
// interrupted): nothing committed is updated and the exit code is 1.
func finish(res *vr.Run, sels []vr.Selection, exp *vr.Expectations, name string, started time.Time, partial, ran bool) int {
	res.WallSeconds = float64(int(time.Since(started).Seconds()*10)) / 10
	res.Sort()
	full := filepath.Join(*outDir, name+".json")
	if err := res.Save(full); err != nil {
		fmt.Fprintln(os.Stderr, "vr:", err)
		return 2
	}
	t := res.Totals()
	fmt.Printf("vr: %s: %d pass, %d fail, %d skip in %.0fs; results in %s\n", name, t.Pass, t.Fail, t.Skip, res.WallSeconds, full)
	if *suite == "full" && !partial && ran {
		snap := filepath.Join(*resultsDir, *runnerName+".json")
		if err := res.Compact().Save(snap); err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			return 2
		}
		fmt.Printf("vr: snapshot %s\n", snap)
		if err := render(); err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			return 2
		}
	}
	if *merge && ran {
		if err := mergeSnapshot(res); err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			return 2
		}
	}
	code := 0
	if exp != nil {
		rep := vr.Compare(exp, res, sels)
		rep.Write(os.Stdout, *expectPath)
		if *update && ran {
			nexp, todo := vr.Update(exp, res, sels)
			if err := nexp.Save(*expectPath); err != nil {
				fmt.Fprintln(os.Stderr, "vr:", err)
				return 2
			}
			fmt.Printf("vr: rewrote %s\n", *expectPath)
			if len(todo) > 0 {
				fmt.Printf("\nWARNING: %d failing tests have reason %q in %s; write the real reason:\n", len(todo), vr.TODOReason, *expectPath)
				for _, x := range todo {
					fmt.Printf("  %s %s\n", x.Package, x.Test)
				}
			}
		} else if !rep.OK() {
			code = 1
		}
	}
	if !ran {
		code = 1
	}
	return code
}

// mergeSnapshot merges a partial run into the runner's snapshot and
// re-renders RESULTS.md.
func mergeSnapshot(res *vr.Run) error {
	snap := filepath.Join(*resultsDir, *runnerName+".json")
	full, err := vr.LoadRun(snap)
	if err != nil {
		return err
	}
	var flags []string
	if *only != "" {
		flags = append(flags, "-only "+*only)
	}
	if *runFilter != "" {
		flags = append(flags, "-run "+*runFilter)
	}
	merged, err := vr.Merge(full, res, strings.Join(flags, " "))
	if err != nil {
		return fmt.Errorf("%s: %w", snap, err)
	}
	if err := merged.Save(snap); err != nil {
		return err
	}
	fmt.Printf("vr: merged into snapshot %s\n", snap)
	return render()
}

func render() error {
	if *mdPath == "" {
		return nil
	}
	var cols []vr.Column
	var names []string
	var py []*vr.PythonRun
	for _, n := range strings.Split(*columns, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		r, err := vr.LoadRun(filepath.Join(*resultsDir, n+".json"))
		if err != nil {
			return err
		}
		cols = append(cols, vr.Column{Name: n, Run: r})
		for _, mode := range []string{n, n + "-streaming"} {
			pr, err := vr.ReadPythonRun(vr.PythonResultsPath(*resultsDir, mode), mode)
			if err != nil {
				return err
			}
			if pr == nil && mode != n {
				continue // streaming never run
			}
			names, py = append(names, strings.Replace(mode, "-", " ", 1)), append(py, pr)
		}
	}
	md := append(vr.Render(cols), vr.RenderPython(py, names)...)
	java, err := javaSection()
	if err != nil {
		return err
	}
	md = append(md, java...)
	if err := os.WriteFile(*mdPath, md, 0o644); err != nil {
		return err
	}
	fmt.Printf("vr: rendered %s\n", *mdPath)
	return nil
}

// javaKnownFiles are the runners' lists of known Java failures, which
// RESULTS.md shows as known.
var javaKnownFiles = map[string]string{"weir": "java/vr/known-weir.txt"}

// javaSection renders the Java suite's runs kept in -results.
func javaSection() ([]byte, error) {
	var runs []*vr.JavaRun
	var names []string
	known := map[string]map[string]string{}
	for _, n := range strings.Split(*columns, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		r, err := vr.LoadJavaRun(vr.JavaResultsPath(*resultsDir, n))
		if err != nil {
			return nil, err
		}
		if known[n], err = vr.LoadJavaKnown(javaKnownFiles[n]); err != nil {
			return nil, err
		}
		runs, names = append(runs, r), append(names, n)
	}
	return vr.RenderJava(runs, names, known), nil
}

// importJava imports a Java suite run, keeps it and checks it: the exit
// status is 1 when a test failed that is not a known failure, or a known
// failure passed.
func importJava() int {
	if *runnerName == "" {
		fmt.Fprintln(os.Stderr, "vr: -java-import needs -runner")
		return 2
	}
	tests, err := vr.ImportSurefire(*javaImport)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vr:", err)
		return 2
	}
	ex, err := vr.ReadJavaExcluded(*javaExcluded)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vr:", err)
		return 2
	}
	known, err := vr.LoadJavaKnown(*javaKnown)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vr:", err)
		return 2
	}
	r := &vr.JavaRun{
		Runner:   *runnerName,
		Started:  time.Now().UTC().Add(-time.Duration(*javaSeconds * float64(time.Second))).Format("2006-01-02 15:04"),
		Seconds:  *javaSeconds,
		Beam:     *javaBeam,
		Tests:    tests,
		Excluded: ex,
	}
	path := vr.JavaResultsPath(*resultsDir, *runnerName)
	if *javaName != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			return 2
		}
		path = vr.JavaResultsPath(*outDir, *runnerName+"-"+*javaName)
	}
	if err := r.Save(path); err != nil {
		fmt.Fprintln(os.Stderr, "vr:", err)
		return 2
	}
	pass, fail, skip := r.Counts()
	fmt.Printf("vr: java %s: %d run, %d pass, %d fail, %d skip, %d excluded by category; results in %s\n",
		*runnerName, len(tests), pass, fail, skip, len(ex), path)
	if *javaName == "" {
		if err := render(); err != nil {
			fmt.Fprintln(os.Stderr, "vr:", err)
			return 2
		}
	}
	if *javaKnown == "" {
		return 0
	}
	unexpected, fixed := vr.CheckJava(r, known)
	for _, u := range unexpected {
		fmt.Printf("vr: java: UNEXPECTED FAILURE %s\n", u)
	}
	for _, f := range fixed {
		fmt.Printf("vr: java: PASSES but listed in %s: %s\n", *javaKnown, f)
	}
	if len(unexpected)+len(fixed) > 0 {
		return 1
	}
	fmt.Printf("vr: java: as expected (%d known failures)\n", fail)
	return 0
}

// beamVersion reads the Beam SDK version this module requires.
func beamVersion() string {
	out, err := exec.Command(*goCmd, "list", "-m", "-f", "{{.Version}}", "github.com/apache/beam/sdks/v2").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
