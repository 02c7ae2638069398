package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ingest writes a table with write, which must set keys in increasing
// order, into the store's folder and ingests it: the records go into the
// tree as one table, without passing through the memtables. They must not
// overlap records in the memtables, or Pebble flushes those first. A
// shuffle spilling its memory uses it, so that the values are not held
// twice at once, in the heap and in memtables.
func (s *Store) ingest(write func(w *sstable.Writer) error) error {
	if err := s.Err(); err != nil {
		return err
	}
	if err := s.ingestTable(write); err != nil {
		// The folder says which disk, as a background failure does.
		return fmt.Errorf("state: the store in %s failed: %w", s.dir, err)
	}
	return nil
}

func (s *Store) ingestTable(write func(w *sstable.Writer) error) error {
	s.closing.RLock()
	defer s.closing.RUnlock()
	if s.closed {
		return errors.New("ingest: the store is closed")
	}
	path := s.fs.PathJoin(s.dir, fmt.Sprintf("spill-%d.sst", importSeq.Add(1)))
	f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer s.fs.Remove(path) // gone already once ingested
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.popts.MakeWriterOptions(0, s.db.TableFormat()))
	if err := write(w); err != nil {
		w.Close()
		return fmt.Errorf("ingest: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("ingest: finish sstable: %w", err)
	}
	if err := s.db.Ingest(context.Background(), []string{path}); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}
