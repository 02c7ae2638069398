package runner

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// fakeSDK answers the reverse retrieval protocol from files on disk, as
// an SDK's staging client does, and counts the artifacts asked of it.
type fakeSDK struct {
	t       *testing.T
	queue   []*jobpb.ArtifactResponseWrapper
	fetched []string // paths of the artifacts the runner asked for
}

func (f *fakeSDK) Send(req *jobpb.ArtifactRequestWrapper) error {
	switch r := req.GetRequest().(type) {
	case *jobpb.ArtifactRequestWrapper_ResolveArtifact:
		f.queue = append(f.queue, &jobpb.ArtifactResponseWrapper{Response: &jobpb.ArtifactResponseWrapper_ResolveArtifactResponse{
			ResolveArtifactResponse: &jobpb.ResolveArtifactsResponse{Replacements: r.ResolveArtifact.GetArtifacts()},
		}})
	case *jobpb.ArtifactRequestWrapper_GetArtifact:
		p, _, err := filePath(r.GetArtifact.GetArtifact())
		if err != nil {
			f.t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.t.Fatal(err)
		}
		f.fetched = append(f.fetched, p)
		f.queue = append(f.queue, &jobpb.ArtifactResponseWrapper{IsLast: true, Response: &jobpb.ArtifactResponseWrapper_GetArtifactResponse{
			GetArtifactResponse: &jobpb.GetArtifactResponse{Data: data},
		}})
	}
	return nil
}

func (f *fakeSDK) Recv() (*jobpb.ArtifactResponseWrapper, error) {
	if len(f.queue) == 0 {
		return nil, io.EOF
	}
	r := f.queue[0]
	f.queue = f.queue[1:]
	return r, nil
}

// stageOnce stages deps as one job would, under a new folder of root, and
// returns what the SDK was asked for and the staged artifacts.
func stageOnce(t *testing.T, root string, deps ...*pipepb.ArtifactInformation) ([]string, []*pipepb.ArtifactInformation) {
	t.Helper()
	dir, err := os.MkdirTemp(root, "job-")
	if err != nil {
		t.Fatal(err)
	}
	sdk := &fakeSDK{t: t}
	p := pipelineWith(map[string][]*pipepb.ArtifactInformation{"java": deps})
	staged, err := stageEnvironments(sdk, p, dir, openArtifactCache(root))
	if err != nil {
		t.Fatal(err)
	}
	return sdk.fetched, staged["java"]
}

// checkContents checks each staged artifact holds its source's bytes and
// checksum, with the permission its role gives.
func checkContents(t *testing.T, staged, deps []*pipepb.ArtifactInformation) {
	t.Helper()
	if len(staged) != len(deps) {
		t.Fatalf("%d staged, want %d", len(staged), len(deps))
	}
	for i, a := range staged {
		p, sum, err := filePath(a)
		if err != nil {
			t.Fatal(err)
		}
		src, _, _ := filePath(deps[i])
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(src)
		if !bytes.Equal(got, want) || sum != sha(want) {
			t.Errorf("artifact %d: staged %q (sha256 %s), want %q", i, got, sum, want)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		wantPerm := fs.FileMode(0o644)
		if deps[i].GetRoleUrn() == urnRoleGoWorker {
			wantPerm = 0o755
		}
		if fi.Mode().Perm() != wantPerm {
			t.Errorf("artifact %d: mode %v, want %v", i, fi.Mode().Perm(), wantPerm)
		}
	}
}

// TestStagingReusesStagedFiles: a file whose declared checksum was staged
// before, by another job or earlier in the same one, is not sent again.
func TestStagingReusesStagedFiles(t *testing.T) {
	src, root := t.TempDir(), t.TempDir()
	jar := func(name, content string) *pipepb.ArtifactInformation {
		p := writeFile(t, src, name, []byte(content))
		return stagedAs(t, fileArtifact(t, p, sha([]byte(content))), name)
	}
	core, harness := jar("beam-core.jar", "core classes"), jar("harness.jar", "harness classes")
	again := jar("copy-of-core.jar", "core classes") // the same jar under another name
	// A Go worker with the same bytes as a jar: executables are kept apart.
	worker := withRole(t, fileArtifact(t, writeFile(t, src, "worker", []byte("core classes")), sha([]byte("core classes"))), urnRoleGoWorker, nil)
	// No checksum declared: fetched, since weir cannot know what it is.
	undeclared := fileArtifact(t, writeFile(t, src, "undeclared.jar", []byte("harness classes")), "")

	deps := []*pipepb.ArtifactInformation{core, harness, again, worker, undeclared}
	fetched, staged := stageOnce(t, root, deps...)
	checkContents(t, staged, deps)
	if want := []string{"beam-core.jar", "harness.jar", "worker", "undeclared.jar"}; !sameBase(fetched, want) {
		t.Errorf("first job asked for %v, want %v", fetched, want)
	}

	// Another job, after the first's folder is gone: only the undeclared one.
	first, _, _ := filePath(staged[0])
	if err := os.RemoveAll(filepath.Dir(filepath.Dir(filepath.Dir(first)))); err != nil {
		t.Fatal(err)
	}
	fetched, staged = stageOnce(t, root, deps...)
	checkContents(t, staged, deps)
	if want := []string{"undeclared.jar"}; !sameBase(fetched, want) {
		t.Errorf("second job asked for %v, want %v", fetched, want)
	}

	// A changed jar under the same name has another checksum: fetched.
	changed := jar("beam-core.jar", "core classes, patched")
	fetched, staged = stageOnce(t, root, changed)
	checkContents(t, staged, []*pipepb.ArtifactInformation{changed})
	if want := []string{"beam-core.jar"}; !sameBase(fetched, want) {
		t.Errorf("changed jar: asked for %v, want %v", fetched, want)
	}
}

func sameBase(paths, names []string) bool {
	if len(paths) != len(names) {
		return false
	}
	for i := range paths {
		if filepath.Base(paths[i]) != names[i] {
			return false
		}
	}
	return true
}

// TestArtifactCacheSweep: entries no job staged for a day go, at most one
// sweep an hour; a job folder's link survives its entry's removal.
func TestArtifactCacheSweep(t *testing.T) {
	root := t.TempDir()
	c := openArtifactCache(root)
	job := writeFile(t, root, "job-1/lib.jar", []byte("lib"))
	c.add(sha([]byte("lib")), job, 0o644)
	e := c.entry(sha([]byte("lib")), 0o644)
	if _, err := os.Stat(e); err != nil {
		t.Fatalf("not cached: %v", err)
	}
	now := time.Now()
	c.sweep(now) // marks the sweep; the entry is fresh
	if _, err := os.Stat(e); err != nil {
		t.Fatalf("fresh entry swept: %v", err)
	}
	later := now.Add(artifactCacheTTL + time.Minute)
	os.Chtimes(e, now, now)
	os.Chtimes(filepath.Join(c.dir, sweepMark), later, later) // swept just now
	c.sweep(later)
	if _, err := os.Stat(e); err != nil {
		t.Fatalf("swept twice within %v: %v", artifactSweepEvery, err)
	}
	c.sweep(later.Add(artifactSweepEvery))
	if _, err := os.Stat(e); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("entry unused for a day still cached (%v)", err)
	}
	if data, err := os.ReadFile(job); err != nil || string(data) != "lib" {
		t.Errorf("job's file after the sweep: %q, %v", data, err)
	}
	// Checksums from the SDK only become paths when they are sha256 hex.
	for _, bad := range []string{"", "../../etc/passwd", sha(nil)[:63] + "/", "mockhashcode"} {
		if c.entry(bad, 0o644) != "" {
			t.Errorf("entry(%q) is a path", bad)
		}
	}
}
