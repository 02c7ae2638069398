package runner

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Staged files are kept by checksum so that a file staged again (by
// another job, or twice in one) is linked instead of sent again: a Java
// job stages its whole classpath, tens or hundreds of jars, and nearly all
// of them are the same from one submission to the next.
const (
	// artifactCacheDir is the cache's folder under the staging root. Job
	// folders there are "<preparation id>-<random>", never this.
	artifactCacheDir = "sha256"
	// artifactCacheTTL is how long an entry no job staged is kept.
	artifactCacheTTL = 24 * time.Hour
	// artifactSweepEvery is how often the cache is swept, at most.
	artifactSweepEvery = time.Hour
	// sweepMark is a file whose time is the last sweep's.
	sweepMark = ".swept"
)

// artifactCache holds staged files under their sha256, each a hard link
// to the same inode as the job folders' copies: removing a job's folder
// leaves the cache's, and the cache's entries take no extra space while
// a job uses them. Only content whose checksum weir computed itself is
// added, so an SDK that declares a wrong checksum cannot put content under
// another's. A nil cache holds nothing.
type artifactCache struct {
	dir string
}

// openArtifactCache opens the cache under a staging root (its folder is
// made when the first file is added, so a refused staging writes nothing),
// and removes entries no job staged for artifactCacheTTL, at most once per
// artifactSweepEvery.
func openArtifactCache(root string) *artifactCache {
	c := &artifactCache{dir: filepath.Join(root, artifactCacheDir)}
	c.sweep(time.Now())
	return c
}

// entry is the file for a checksum and permission, or "" if sum is not a
// sha256 in hex (it comes from the SDK, and only becomes a path when it is).
func (c *artifactCache) entry(sum string, perm fs.FileMode) string {
	if c == nil || len(sum) != 64 {
		return ""
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return ""
	}
	name := sum
	if perm&0o111 != 0 {
		name += ".x" // links share their mode: executables apart
	}
	return filepath.Join(c.dir, name)
}

// link makes dst the cached file for sum, reporting whether it could.
func (c *artifactCache) link(sum, dst string, perm fs.FileMode) bool {
	e := c.entry(sum, perm)
	if e == "" {
		return false
	}
	if err := os.Link(e, dst); err != nil {
		return false
	}
	now := time.Now()
	os.Chtimes(e, now, now) // the sweep keeps what is used
	return true
}

// add keeps src, whose content has the sha256 sum, in the cache. A failure
// only costs the next job a transfer, so it is not reported.
func (c *artifactCache) add(sum, src string, perm fs.FileMode) {
	e := c.entry(sum, perm)
	if e == "" {
		return
	}
	err := os.Link(src, e)
	if errors.Is(err, fs.ErrNotExist) && os.MkdirAll(c.dir, 0o755) == nil {
		err = os.Link(src, e)
	}
	_ = err // fs.ErrExist: another job added it first
}

// sweep removes entries not staged since now-artifactCacheTTL.
func (c *artifactCache) sweep(now time.Time) {
	mark := filepath.Join(c.dir, sweepMark)
	if fi, err := os.Stat(mark); err == nil && now.Sub(fi.ModTime()) < artifactSweepEvery {
		return
	}
	if _, err := os.Stat(c.dir); err != nil {
		return // no cache yet
	}
	if f, err := os.Create(mark); err == nil {
		f.Close()
	}
	os.Chtimes(mark, now, now)
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() == sweepMark {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > artifactCacheTTL {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
}
