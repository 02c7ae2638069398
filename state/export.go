package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Snapshot is the store as of one instant: a checkpoint takes one when a
// subtask reaches the barrier (cheap, the synchronous part) and exports
// from it afterwards while the subtask writes on (the asynchronous part).
type Snapshot struct {
	s    *Store
	snap *pebble.Snapshot
}

// Snapshot returns the store as of now. Writes still held in an operator's
// batch are not in it: flush them first. Close it when done.
func (s *Store) Snapshot() (*Snapshot, error) {
	s.closing.RLock()
	defer s.closing.RUnlock()
	if s.closed {
		return nil, errors.New("state: snapshot: the store is closed")
	}
	return &Snapshot{s: s, snap: s.db.NewSnapshot()}, nil
}

// Close releases the snapshot.
func (sn *Snapshot) Close() error {
	if err := sn.snap.Close(); err != nil {
		return fmt.Errorf("state: close snapshot: %w", err)
	}
	return nil
}

// ExportStats say what an export wrote.
type ExportStats struct {
	Records int64
	// KeyBytes and ValueBytes are the records' sizes before encoding.
	KeyBytes, ValueBytes int64
}

// namespacePrefix is how every record of namespace ns starts (see
// NewShuffle, NewUserState, NewTriggerWindows). The length prefix makes
// the prefixes of two namespaces never prefixes of each other, so their
// ranges are disjoint.
func namespacePrefix(ns string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(ns))), ns...)
}

// Export writes every record (all kinds) of the namespaces, as of the
// snapshot, into one sstable that Import loads. It calls create only if
// there is a record to write, and closes what it returns; with no record
// it writes nothing and returns zero stats.
func (sn *Snapshot) Export(namespaces []string, create func() (vfs.File, error)) (ExportStats, error) {
	prefixes := make([][]byte, 0, len(namespaces))
	for _, ns := range namespaces {
		prefixes = append(prefixes, namespacePrefix(ns))
	}
	// An sstable takes keys in order: export the namespaces in key order.
	slices.SortFunc(prefixes, bytes.Compare)
	prefixes = slices.CompactFunc(prefixes, bytes.Equal)
	var st ExportStats
	var w *sstable.Writer
	abort := func(err error) (ExportStats, error) {
		if w != nil {
			w.Close()
		}
		return ExportStats{}, err
	}
	for _, p := range prefixes {
		it, err := sn.snap.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
		if err != nil {
			return abort(fmt.Errorf("state: export: %w", err))
		}
		for valid := it.First(); valid; valid = it.Next() {
			if w == nil {
				f, err := create()
				if err != nil {
					it.Close()
					return abort(fmt.Errorf("state: export: %w", err))
				}
				w = sstable.NewWriter(objstorageprovider.NewFileWritable(f),
					sn.s.popts.MakeWriterOptions(0, sn.s.db.TableFormat()))
			}
			v, err := it.ValueAndErr()
			if err == nil {
				err = w.Set(it.Key(), v)
			}
			if err != nil {
				it.Close()
				return abort(fmt.Errorf("state: export: %w", err))
			}
			st.Records++
			st.KeyBytes += int64(len(it.Key()))
			st.ValueBytes += int64(len(v))
		}
		if err := it.Close(); err != nil {
			return abort(fmt.Errorf("state: export: %w", err))
		}
	}
	if w != nil {
		if err := w.Close(); err != nil {
			return ExportStats{}, fmt.Errorf("state: export: finish sstable: %w", err)
		}
	}
	return st, nil
}

// importSeq names staged import files uniquely within the process.
var importSeq atomic.Uint64

// Import loads sstables written by Export, read from fs, into the store.
// The namespaces they hold must be empty here, as in the fresh store of a
// job being restored: Import adds records, it does not remove any. The
// files are copied into the store's folder first, because ingestion moves
// them, and the checkpoint they come from must stay whole.
func (s *Store) Import(ctx context.Context, fs vfs.FS, paths []string) error {
	s.closing.RLock()
	defer s.closing.RUnlock()
	if s.closed {
		return errors.New("state: import: the store is closed")
	}
	staged := make([]string, 0, len(paths))
	defer func() {
		for _, p := range staged {
			s.fs.Remove(p) // gone already after a successful ingestion
		}
	}()
	for _, p := range paths {
		dst := s.fs.PathJoin(s.dir, fmt.Sprintf("import-%d.sst", importSeq.Add(1)))
		if err := vfs.CopyAcrossFS(fs, p, s.fs, dst); err != nil {
			return fmt.Errorf("state: import %s: %w", p, err)
		}
		staged = append(staged, dst)
	}
	if len(staged) == 0 {
		return nil
	}
	if err := s.db.Ingest(ctx, staged); err != nil {
		return fmt.Errorf("state: import %d sstables: %w", len(staged), err)
	}
	return nil
}

// MoveNamespace moves every record of namespace from to namespace to,
// which must be empty: a savepoint restored into a changed graph puts a
// stage's state under its new stage id. It commits in batches of a few
// MiB, so a large namespace does not build one huge batch; it runs before
// any subtask does, so no reader sees a half-moved namespace.
func (s *Store) MoveNamespace(from, to string) error {
	if from == to {
		return nil
	}
	fp, tp := namespacePrefix(from), namespacePrefix(to)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: fp, UpperBound: prefixEnd(fp)})
	if err != nil {
		return fmt.Errorf("state: move %s to %s: %w", from, to, err)
	}
	defer it.Close()
	const flushAt = 4 << 20
	b := s.db.NewBatch()
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			b.Close()
			return fmt.Errorf("state: move %s to %s: %w", from, to, err)
		}
		k := append(bytes.Clone(tp), it.Key()[len(fp):]...)
		if err := b.Set(k, v, nil); err != nil {
			b.Close()
			return err
		}
		if b.Len() >= flushAt {
			if err := s.commit(b, "move namespace"); err != nil {
				return err
			}
			b = s.db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		b.Close()
		return fmt.Errorf("state: move %s to %s: %w", from, to, err)
	}
	if err := b.DeleteRange(fp, prefixEnd(fp), nil); err != nil {
		b.Close()
		return err
	}
	return s.commit(b, "move namespace")
}
