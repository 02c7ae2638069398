package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/internal/contain"
)

// Options configure a Store.
type Options struct {
	// Dir is the store's folder. Required unless FS is an in-memory FS.
	Dir string
	// FS is the file system; default the operating system's. Tests pass
	// vfs.NewMem() or an error-injecting FS.
	FS vfs.FS
	// CacheSize is the block cache in bytes; default 64 MiB.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes; default 32 MiB.
	// At most MemTableStopWritesThreshold (4) of them are held.
	MemTableSize uint64
	// ShuffleMemory is the bytes the store's shuffles together keep in
	// memory before a shuffle spills to Pebble (memshuffle.go); default
	// 64 MiB, negative none.
	ShuffleMemory int64
}

// EnsureDefaults fills unset options.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 64 << 20
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 32 << 20
	}
	if o.ShuffleMemory == 0 {
		o.ShuffleMemory = 64 << 20
	}
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	if o.Dir == "" {
		return errors.New("state: Options.Dir is required")
	}
	if o.MemTableSize < 1<<20 {
		return fmt.Errorf("state: MemTableSize %d is under 1 MiB", o.MemTableSize)
	}
	return nil
}

// Store is one Pebble database.
type Store struct {
	db *pebble.DB
	// dir, fs and popts are what Import and Export need to stage and
	// write sstables the database can ingest.
	dir   string
	fs    vfs.FS
	popts *pebble.Options
	// failed holds the first error Pebble hit in the background (a flush or
	// compaction that could not write, a full disk). Writes check it, so a
	// store that can no longer persist fails the job rather than stalling
	// or dropping data.
	failed     atomic.Pointer[error]
	failedOnce sync.Once
	failedCh   chan struct{} // closed with the first background failure
	inflight   atomic.Int64  // commits running, stalled ones included
	// closing guards Close against a concurrent Count.
	closing sync.RWMutex
	closed  bool
	// holds are the fired groups consumers still read from the store.
	holds holdTable
	// shuffleMem is what the shuffles hold in memory, of at most
	// shuffleMemLimit bytes.
	shuffleMem      atomic.Int64
	shuffleMemLimit int64
	shuffleMemNS    sync.Map // namespace -> *atomic.Int64, its share
}

// shuffleMemOf returns the counter of the shuffle memory namespace ns
// holds, which NamespaceBytes adds to what the store holds of it.
func (s *Store) shuffleMemOf(ns string) *atomic.Int64 {
	c, _ := s.shuffleMemNS.LoadOrStore(ns, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// reserveShuffleMemory takes n bytes of the shuffles' memory, if there are.
func (s *Store) reserveShuffleMemory(n int64) bool {
	for {
		used := s.shuffleMem.Load()
		if used+n > s.shuffleMemLimit {
			return false
		}
		if s.shuffleMem.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (s *Store) releaseShuffleMemory(n int64) { s.shuffleMem.Add(-n) }

// Err returns the store's first background failure, if any.
func (s *Store) Err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Store) fail(err error) {
	// The folder says which disk: Pebble's error may name only a file.
	err = fmt.Errorf("state: the store in %s failed in the background: %w", s.dir, err)
	s.failed.CompareAndSwap(nil, &err)
	s.failedOnce.Do(func() { close(s.failedCh) })
}

// commit commits b and closes it. A store that failed in the background
// (a flush that cannot write) stalls commits for good once its memtables
// are full, so commit returns the failure instead of waiting; the stalled
// commit then closes b whenever it ends. what names the write in errors.
func (s *Store) commit(b *pebble.Batch, what string) error {
	if err := s.Err(); err != nil {
		b.Close()
		return err
	}
	done := make(chan error, 1)
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Add(-1)
		// A panic in Pebble (a batch misused) fails this write, and so
		// the job, not the process.
		done <- contain.Call(func() error {
			err := b.Commit(pebble.NoSync)
			b.Close()
			return err
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("state: %s: %w", what, err)
		}
		return nil
	case <-s.failedCh:
		return s.Err()
	}
}

// Open opens or creates the store.
func Open(opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cache := pebble.NewCache(opts.CacheSize)
	defer cache.Unref()
	s := &Store{dir: opts.Dir, fs: opts.FS, failedCh: make(chan struct{}), shuffleMemLimit: max(opts.ShuffleMemory, 0)}
	s.popts = &pebble.Options{
		EventListener: &pebble.EventListener{
			BackgroundError: s.fail,
			FlushEnd: func(info pebble.FlushInfo) {
				if info.Err != nil {
					s.fail(info.Err)
				}
			},
			CompactionEnd: func(info pebble.CompactionInfo) {
				if info.Err != nil {
					s.fail(info.Err)
				}
			},
		},
		// Pebble's default logger ends the process on Fatalf (logger.go).
		Logger:                      pebbleLogger{s},
		FS:                          opts.FS,
		Cache:                       cache,
		MemTableSize:                opts.MemTableSize,
		MemTableStopWritesThreshold: 4,
		// State is rebuilt from the last checkpoint after a crash, so the
		// write-ahead log buys nothing until checkpoints use it.
		DisableWAL: true,
		// A shuffle's files are written once by a flush and read once when
		// its windows fire; compacting them before that rewrites data about
		// to be deleted (a fifth of the runner's CPU on a 1M-key combine).
		// Let more of them wait in L0, at the price of merging more files
		// when reading. Pebble compacts L0 once twice its depth reaches
		// this threshold, so 32 lets 16 sublevels wait: a 1M-key combine's
		// eight flushes no longer set off a rewrite of its 106 MB.
		L0CompactionThreshold: 32,
		L0StopWritesThreshold: 64,
	}
	s.popts.EnsureDefaults()
	// Most of what the store holds is shuffle data, read once and deleted
	// soon after; compressing it costs CPU it never pays back, and the
	// rest (user state, trigger windows) lives no longer than its job.
	// Checkpoints are written separately (export.go).
	for i := range s.popts.Levels {
		s.popts.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	db, err := pebble.Open(opts.Dir, s.popts)
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", opts.Dir, err)
	}
	s.db = db
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error {
	s.closing.Lock()
	defer s.closing.Unlock()
	s.closed = true
	if err := s.Err(); err != nil && s.inflight.Load() > 0 {
		// Pebble panics when closed under a running commit, and a commit
		// stalled on a failed store never ends: leave the database to the
		// garbage collector rather than crash the process.
		return fmt.Errorf("state: close: left open under a commit the failure stalled: %w", err)
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("state: close: %w", err)
	}
	return nil
}

// Kind says what a record holds.
type Kind byte

// Record kinds.
const (
	KindShuffle Kind = 1
)

// Count returns how many records of kind k the store holds, over every
// namespace. It scans the whole store: for tests and diagnostics.
func (s *Store) Count(k Kind) (int, error) {
	n, _, err := s.Usage(k)
	return n, err
}

// Usage returns how many records of kind k the store holds, over every
// namespace, and their bytes (keys and values). It scans the whole store:
// for tests, benchmarks and diagnostics.
func (s *Store) Usage(k Kind) (records int, bytes int64, err error) {
	s.closing.RLock()
	defer s.closing.RUnlock()
	if s.closed {
		return 0, 0, errors.New("state: usage: the store is closed")
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return 0, 0, fmt.Errorf("state: usage: %w", err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()
		l, w := binary.Uvarint(key)
		if w <= 0 || uint64(len(key)-w) <= l {
			continue
		}
		if Kind(key[w+int(l)]) == k {
			records++
			bytes += int64(len(key) + len(it.Value()))
		}
	}
	return records, bytes, it.Error()
}

// namespaceScanLimit bounds the records NamespaceBytes reads one by one.
const namespaceScanLimit = 20_000

// NamespaceBytes estimates the bytes (keys and values) of namespace ns.
// A small namespace is counted exactly, record by record; past
// namespaceScanLimit records it takes Pebble's estimate of the range's
// size on disk if that is larger, so a metric read every few seconds
// never scans a large state whole. Data still in the memtable is only in
// the exact count. A shuffle's values held in memory (memshuffle.go)
// count as the memory they hold.
func (s *Store) NamespaceBytes(ns string) (int64, error) {
	s.closing.RLock()
	defer s.closing.RUnlock()
	if s.closed {
		return 0, errors.New("state: namespace size: the store is closed")
	}
	lo := namespacePrefix(ns)
	hi := prefixEnd(lo)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, fmt.Errorf("state: namespace size %s: %w", ns, err)
	}
	defer it.Close()
	var n int64
	records := 0
	for valid := it.First(); valid && records < namespaceScanLimit; valid = it.Next() {
		n += int64(len(it.Key()) + len(it.Value()))
		records++
	}
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("state: namespace size %s: %w", ns, err)
	}
	var mem int64
	if c, ok := s.shuffleMemNS.Load(ns); ok {
		mem = c.(*atomic.Int64).Load()
	}
	if records < namespaceScanLimit {
		return n + mem, nil
	}
	disk, err := s.db.EstimateDiskUsage(lo, hi)
	if err != nil {
		return 0, fmt.Errorf("state: namespace size %s: %w", ns, err)
	}
	return max(n, int64(disk)) + mem, nil
}
