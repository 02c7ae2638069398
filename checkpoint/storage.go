package checkpoint

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// KeyGroups is the number of key groups a job's keys hash into, fixed for
// the life of a job and recorded in each manifest so a restore can refuse
// a checkpoint made with another.
const KeyGroups = 128

// ManifestName is the manifest's file name inside a checkpoint folder.
const ManifestName = "MANIFEST"

// StorageOptions configure a Storage.
type StorageOptions struct {
	// Dir is the checkpoint root: checkpoint N is the folder chk-N in it.
	Dir string
	// FS is the file system; default the operating system's. Tests pass
	// an in-memory or error-injecting one.
	FS vfs.FS
	// Keep is how many completed checkpoints stay; default 3.
	Keep int
	// Job names the job in manifests.
	Job string
	// Graph is the job's graph, recorded in every manifest so that a
	// restore can refuse a checkpoint of another graph (CheckGraph).
	Graph []GraphNode
	// Origin is the savepoint the job started from, recorded in every
	// manifest (Manifest.Origin).
	Origin string
}

// Storage writes checkpoints into a root folder so that only complete ones
// are visible: checkpoint N is written into chk-N.tmp, every file synced,
// the MANIFEST written and synced last, and the folder renamed to chk-N.
// A crash at any point leaves at most a .tmp folder, which OpenStorage
// removes.
type Storage struct {
	fs     vfs.FS
	dir    string
	keep   int
	job    string
	graph  []GraphNode
	origin string
}

// OpenStorage opens (creating) the checkpoint root and removes what
// unfinished checkpoints left behind.
func OpenStorage(o StorageOptions) (*Storage, error) {
	if o.Dir == "" {
		return nil, errors.New("checkpoint: storage needs a folder")
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Keep <= 0 {
		o.Keep = 3
	}
	s := &Storage{fs: o.FS, dir: o.Dir, keep: o.Keep, job: o.Job, graph: o.Graph, origin: o.Origin}
	if err := mkdirAllSynced(s.fs, s.dir); err != nil {
		return nil, fmt.Errorf("checkpoint: create %s: %w", s.dir, err)
	}
	names, err := s.fs.List(s.dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list %s: %w", s.dir, err)
	}
	for _, n := range names {
		if _, ok := parseDir(n, ".tmp"); ok {
			if err := s.fs.RemoveAll(s.fs.PathJoin(s.dir, n)); err != nil {
				return nil, fmt.Errorf("checkpoint: remove unfinished %s: %w", n, err)
			}
		}
	}
	return s, nil
}

// Dir is the checkpoint root.
func (s *Storage) Dir() string { return s.dir }

// FS is the file system the storage writes to.
func (s *Storage) FS() vfs.FS { return s.fs }

func dirName(id ID) string { return "chk-" + strconv.FormatUint(uint64(id), 10) }

// parseDir reads the id of a folder named chk-N plus suffix.
func parseDir(name, suffix string) (ID, bool) {
	rest, ok := strings.CutPrefix(name, "chk-")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, suffix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != rest {
		return 0, false
	}
	return ID(n), true
}

// Manifest describes a checkpoint's files.
type Manifest struct {
	Version    int       `json:"version"`
	Checkpoint ID        `json:"checkpoint"`
	Job        string    `json:"job"`
	Time       time.Time `json:"time"`
	KeyGroups  int       `json:"key_groups"`
	Files      []File    `json:"files"`
	// Subtasks hold what each subtask recorded besides files (source
	// positions, watermark holds, pending sink commits), opaque here.
	Subtasks []SubtaskMeta `json:"subtasks,omitempty"`
	// Stats are the checkpoint's statistics, for `weir checkpoints`.
	Stats *ManifestStats `json:"stats,omitempty"`
	// Graph is the graph of the job that wrote it, node by node.
	Graph []GraphNode `json:"graph,omitempty"`
	// Savepoint marks a checkpoint taken on request (`weir savepoint`).
	Savepoint bool `json:"savepoint,omitempty"`
	// Origin is the savepoint the run that wrote it started from, if any:
	// a job started from a savepoint that crashes resumes from its own
	// checkpoints, not from the savepoint again.
	Origin string `json:"origin,omitempty"`
}

// File is one file of a checkpoint.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// SubtaskMeta is one subtask's metadata.
type SubtaskMeta struct {
	Node    int    `json:"node"`
	Subtask int    `json:"subtask"`
	Meta    []byte `json:"meta,omitempty"`
}

// ManifestStats are the statistics a manifest keeps.
type ManifestStats struct {
	Trigger           time.Time     `json:"trigger"`
	Duration          time.Duration `json:"duration_ns"`
	Bytes             int64         `json:"bytes"`
	InFlightBytes     int64         `json:"in_flight_bytes"`
	UnalignedSubtasks int           `json:"unaligned_subtasks"`
	Subtasks          int           `json:"subtasks"`
}

// manifestFile is the MANIFEST on disk: the manifest and the SHA-256 of
// its exact bytes, so an altered manifest is told from a valid one.
type manifestFile struct {
	SHA256   string          `json:"sha256"`
	Manifest json.RawMessage `json:"manifest"`
}

const manifestVersion = 1

// Writer writes one checkpoint. Create and SetSubtask are safe for
// concurrent use: every subtask writes its own files.
type Writer struct {
	s   *Storage
	id  ID
	tmp string
	mu  sync.Mutex
	m   Manifest
	// open counts files created and not yet closed; Commit refuses while
	// any is open.
	open  int
	names map[string]bool
	done  bool
}

// Begin starts checkpoint id in a fresh chk-id.tmp folder.
func (s *Storage) Begin(id ID) (*Writer, error) {
	tmp := s.fs.PathJoin(s.dir, dirName(id)+".tmp")
	if err := s.fs.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("checkpoint %d: clear %s: %w", id, tmp, err)
	}
	if err := s.fs.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint %d: create %s: %w", id, tmp, err)
	}
	return &Writer{s: s, id: id, tmp: tmp, names: map[string]bool{},
		m: Manifest{Version: manifestVersion, Checkpoint: id, Job: s.job, KeyGroups: KeyGroups, Graph: s.graph, Origin: s.origin}}, nil
}

// ID is the checkpoint being written.
func (w *Writer) ID() ID { return w.id }

// Create creates a file of the checkpoint. What is written to it is
// checksummed as it goes (it must be written in order: WriteAt is
// refused); Close syncs it and records it in the manifest.
func (w *Writer) Create(name string) (vfs.File, error) {
	if name == "" || name == ManifestName || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("checkpoint %d: bad file name %q", w.id, name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, fmt.Errorf("checkpoint %d: create %s after commit or abort", w.id, name)
	}
	if w.names[name] {
		return nil, fmt.Errorf("checkpoint %d: file %s created twice", w.id, name)
	}
	f, err := w.s.fs.Create(w.s.fs.PathJoin(w.tmp, name), vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d: create %s: %w", w.id, name, err)
	}
	w.names[name] = true
	w.open++
	return &hashFile{File: f, w: w, name: name, h: sha256.New()}, nil
}

// WriteFile writes a whole file of the checkpoint.
func (w *Writer) WriteFile(name string, data []byte) error {
	f, err := w.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint %d: write %s: %w", w.id, name, err)
	}
	return f.Close()
}

// Size returns the size of a file written and closed.
func (w *Writer) Size(name string) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.m.Files {
		if f.Name == name {
			return f.Size, true
		}
	}
	return 0, false
}

// SetSubtask records a subtask's metadata.
func (w *Writer) SetSubtask(t Task, meta []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m.Subtasks = append(w.m.Subtasks, SubtaskMeta{Node: t.Node, Subtask: t.Subtask, Meta: meta})
}

// hashFile checksums a checkpoint file while it is written.
type hashFile struct {
	vfs.File
	w      *Writer
	name   string
	h      hash.Hash
	size   int64
	err    error
	closed bool
}

// Write checksums p before writing it: a file system may use p as scratch
// space once written (Pebble's in-memory one does in race builds). A short
// write fails the file, so the bytes summed and not written never count.
func (f *hashFile) Write(p []byte) (int, error) {
	f.h.Write(p)
	n, err := f.File.Write(p)
	f.size += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil && f.err == nil {
		f.err = err
	}
	return n, err
}

func (f *hashFile) WriteAt([]byte, int64) (int, error) {
	return 0, fmt.Errorf("checkpoint %d: %s: WriteAt would defeat the checksum", f.w.id, f.name)
}

// Close syncs the file and records its size and checksum; a file that
// failed a write is not recorded, and Commit then fails.
func (f *hashFile) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	err := f.err
	if err == nil {
		err = f.File.Sync()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.open--
	if err != nil {
		return fmt.Errorf("checkpoint %d: write %s: %w", f.w.id, f.name, err)
	}
	f.w.m.Files = append(f.w.m.Files, File{Name: f.name, Size: f.size, SHA256: hex.EncodeToString(f.h.Sum(nil))})
	return nil
}

// Commit writes the manifest, syncs, and renames the folder to chk-id:
// from then on the checkpoint is visible. It then removes the completed
// checkpoints beyond the number kept. On an error the caller calls Abort.
func (w *Writer) Commit(now time.Time, stats *ManifestStats) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return fmt.Errorf("checkpoint %d: committed after commit or abort", w.id)
	}
	if w.open > 0 {
		return fmt.Errorf("checkpoint %d: commit with %d files still open", w.id, w.open)
	}
	if len(w.m.Files) != len(w.names) {
		return fmt.Errorf("checkpoint %d: commit with %d of %d files written", w.id, len(w.m.Files), len(w.names))
	}
	w.m.Time = now.UTC()
	w.m.Stats = stats
	slices.SortFunc(w.m.Files, func(a, b File) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(w.m.Subtasks, func(a, b SubtaskMeta) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Subtask, b.Subtask))
	})
	body, err := json.Marshal(w.m)
	if err != nil {
		return fmt.Errorf("checkpoint %d: encode manifest: %w", w.id, err)
	}
	sum := sha256.Sum256(body)
	data, err := json.MarshalIndent(manifestFile{SHA256: hex.EncodeToString(sum[:]), Manifest: body}, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint %d: encode manifest: %w", w.id, err)
	}
	fs := w.s.fs
	if err := writeSynced(fs, fs.PathJoin(w.tmp, ManifestName), data); err != nil {
		return fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	if err := syncDir(fs, w.tmp); err != nil {
		return fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	final := fs.PathJoin(w.s.dir, dirName(w.id))
	if err := fs.Rename(w.tmp, final); err != nil {
		return fmt.Errorf("checkpoint %d: publish: %w", w.id, err)
	}
	w.done = true
	// The rename is durable once the root is synced. If that fails the
	// checkpoint may vanish in a crash, but it is complete and valid now,
	// so the job goes on; the next checkpoint syncs the root again.
	_ = syncDir(fs, w.s.dir)
	return w.s.prune()
}

// Abort removes what was written of the checkpoint. It is safe after
// Commit (it does nothing then) and more than once.
func (w *Writer) Abort() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	if err := w.s.fs.RemoveAll(w.tmp); err != nil {
		return fmt.Errorf("checkpoint %d: remove %s: %w", w.id, w.tmp, err)
	}
	return nil
}

func writeSynced(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// mkdirAllSynced creates dir and the parents it lacks, and syncs the
// parent of each folder it made: a folder whose entry was never synced may
// vanish in a machine crash, and the checkpoints in it with it.
func mkdirAllSynced(fs vfs.FS, dir string) error {
	var made []string
	for d := dir; ; d = fs.PathDir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		made = append(made, d)
		if fs.PathDir(d) == d {
			break
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range made {
		if err := syncDir(fs, fs.PathDir(d)); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("open folder %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// List returns the ids of the visible checkpoints, newest first. It does
// not verify them.
func (s *Storage) List() ([]ID, error) { return listComplete(s.fs, s.dir) }

// ListComplete returns the completed checkpoints in the root dir, newest
// first, none if dir does not exist. Unlike OpenStorage it changes
// nothing, so it is what reads a root without holding its lock (LockRoot):
// the unfinished checkpoint OpenStorage would remove may be another job's,
// in flight.
func ListComplete(fs vfs.FS, dir string) ([]ID, error) {
	if fs == nil {
		fs = vfs.Default
	}
	ids, err := listComplete(fs, dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return ids, err
}

func listComplete(fs vfs.FS, dir string) ([]ID, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list %s: %w", dir, err)
	}
	var ids []ID
	for _, n := range names {
		if id, ok := parseDir(n, ""); ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b ID) int { return cmp.Compare(b, a) })
	return ids, nil
}

// prune removes the oldest completed checkpoints beyond the number kept.
func (s *Storage) prune() error {
	ids, err := s.List()
	if err != nil {
		return err
	}
	for _, id := range ids[min(len(ids), s.keep):] {
		if err := s.fs.RemoveAll(s.fs.PathJoin(s.dir, dirName(id))); err != nil {
			return fmt.Errorf("checkpoint: remove old checkpoint %d: %w", id, err)
		}
	}
	return nil
}

// Checkpoint is a verified, visible checkpoint.
type Checkpoint struct {
	Dir      string
	Manifest Manifest
}

// Path returns the path of one of the checkpoint's files.
func (c *Checkpoint) Path(fs vfs.FS, name string) string { return fs.PathJoin(c.Dir, name) }

// Problem says what is wrong with a checkpoint file.
type Problem string

// Problems.
const (
	Missing     Problem = "missing"
	Truncated   Problem = "truncated"
	Oversized   Problem = "longer than recorded"
	Mismatch    Problem = "checksum mismatch"
	BadManifest Problem = "bad manifest"
)

// CorruptError says what is wrong with a checkpoint, naming the file.
type CorruptError struct {
	ID      ID
	Dir     string
	File    string
	Problem Problem
	Detail  string
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("checkpoint %d (%s): %s: %s", e.ID, e.Dir, e.File, e.Problem)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// ErrNoCheckpoint is returned by Latest when no checkpoint verifies.
var ErrNoCheckpoint = errors.New("checkpoint: no complete checkpoint")

// Latest returns the newest checkpoint whose manifest and files verify.
// Each newer one that did not verify is reported, not skipped silently:
// the caller logs them. With none valid it returns ErrNoCheckpoint.
func (s *Storage) Latest() (*Checkpoint, []*CorruptError, error) {
	ids, err := s.List()
	if err != nil {
		return nil, nil, err
	}
	var corrupt []*CorruptError
	for _, id := range ids {
		c, err := s.Verify(id)
		var ce *CorruptError
		switch {
		case err == nil:
			return c, corrupt, nil
		case errors.As(err, &ce):
			corrupt = append(corrupt, ce)
		default:
			return nil, corrupt, err
		}
	}
	return nil, corrupt, ErrNoCheckpoint
}

// Verify reads checkpoint id's manifest and checks every file's size and
// SHA-256. What is wrong is a *CorruptError; other errors are I/O.
func (s *Storage) Verify(id ID) (*Checkpoint, error) {
	return verifyDir(s.fs, s.fs.PathJoin(s.dir, dirName(id)), id, true)
}

// verifyDir verifies the checkpoint in dir, which must be checkpoint id if
// checkID.
func verifyDir(fs vfs.FS, dir string, id ID, checkID bool) (*Checkpoint, error) {
	bad := func(file string, p Problem, detail string, args ...any) error {
		return &CorruptError{ID: id, Dir: dir, File: file, Problem: p, Detail: fmt.Sprintf(detail, args...)}
	}
	m, err := readManifest(fs, dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, bad(ManifestName, Missing, "")
		}
		return nil, bad(ManifestName, BadManifest, "%v", err)
	}
	if !checkID {
		id = m.Checkpoint
	}
	if m.Checkpoint != id {
		return nil, bad(ManifestName, BadManifest, "it describes checkpoint %d", m.Checkpoint)
	}
	if m.KeyGroups != KeyGroups {
		return nil, bad(ManifestName, BadManifest, "%d key groups, this runner uses %d", m.KeyGroups, KeyGroups)
	}
	for _, f := range m.Files {
		if err := verifyFile(fs, dir, f); err != nil {
			var p Problem
			var detail string
			switch e := err.(type) {
			case problemError:
				p, detail = e.p, e.detail
			default:
				if errors.Is(err, os.ErrNotExist) {
					p = Missing
				} else {
					return nil, fmt.Errorf("checkpoint %d: verify %s: %w", id, f.Name, err)
				}
			}
			return nil, bad(f.Name, p, "%s", detail)
		}
	}
	return &Checkpoint{Dir: dir, Manifest: *m}, nil
}

type problemError struct {
	p      Problem
	detail string
}

func (e problemError) Error() string { return string(e.p) + ": " + e.detail }

func readManifest(fs vfs.FS, dir string) (*Manifest, error) {
	data, err := readAll(fs, fs.PathJoin(dir, ManifestName))
	if err != nil {
		return nil, err
	}
	var mf manifestFile
	if err := json.Unmarshal(data, &mf); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	// The raw message is re-indented by MarshalIndent; compact it back to
	// the bytes that were summed.
	body, err := compact(mf.Manifest)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != mf.SHA256 {
		return nil, fmt.Errorf("%s: its content does not match its own SHA-256", Mismatch)
	}
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("not a manifest: %w", err)
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("version %d, this runner reads %d", m.Version, manifestVersion)
	}
	return &m, nil
}

func verifyFile(fs vfs.FS, dir string, f File) error {
	r, err := fs.Open(fs.PathJoin(dir, f.Name))
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return err
	}
	switch {
	case n < f.Size:
		return problemError{Truncated, fmt.Sprintf("%d of %d bytes", n, f.Size)}
	case n > f.Size:
		return problemError{Oversized, fmt.Sprintf("%d bytes, %d recorded", n, f.Size)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return problemError{Mismatch, fmt.Sprintf("SHA-256 %s, %s recorded", got[:12], f.SHA256[:min(12, len(f.SHA256))])}
	}
	return nil
}

func readAll(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
