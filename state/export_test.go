package state

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func openOn(t *testing.T, fs vfs.FS, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, FS: fs, MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dump lists every record of the store as "key=value", in key order.
func dump(t *testing.T, s *Store, prefixes ...[]byte) []string {
	t.Helper()
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for valid := it.First(); valid; valid = it.Next() {
		for _, p := range prefixes {
			if bytes.HasPrefix(it.Key(), p) {
				out = append(out, fmt.Sprintf("%x=%x", it.Key(), it.Value()))
			}
		}
	}
	return out
}

// writeAll writes round r of shuffle buffers, user state and trigger
// windows into namespace ns, and removes some of round r-1, so that a
// later round changes what an earlier one wrote.
func writeAll(t *testing.T, sh *Shuffle, us *UserState, tw *TriggerWindows, r int) {
	t.Helper()
	for i := range 50 {
		key := []byte(fmt.Sprint("k", i))
		if err := sh.Add(i%128, mtime.Time(100*r), []byte("w"), key, mtime.Time(r), []byte(fmt.Sprint("v", r))); err != nil {
			t.Fatal(err)
		}
		id := WindowID{KeyGroup: i % 128, End: mtime.Time(r), Key: key, Window: []byte(fmt.Sprint("w", r))}
		if err := tw.Create(id, []byte(fmt.Sprint("meta", r))); err != nil {
			t.Fatal(err)
		}
		if err := tw.Append(id, []byte(fmt.Sprint("tv", r))); err != nil {
			t.Fatal(err)
		}
		if r > 0 {
			if err := tw.Delete(WindowID{KeyGroup: i % 128, End: mtime.Time(r - 1), Key: key, Window: []byte(fmt.Sprint("w", r-1))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sh.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	txn := us.Begin()
	for i := range 20 {
		c := Cell{KeyGroup: i, Window: []byte("gw"), Key: []byte(fmt.Sprint("u", i)), Transform: "t", StateID: "bag"}
		if r > 0 && i%2 == 0 {
			if err := txn.BagClear(c); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.BagAppend(c, mtime.Time(1000), []byte(fmt.Sprint("b", r))); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestExportImportIsThePointInTime writes every kind of record, snapshots,
// writes more (adding, overwriting, deleting), exports from the snapshot,
// and imports into a fresh store: the fresh store holds exactly the
// records as of the snapshot, of the exported namespaces only.
func TestExportImportIsThePointInTime(t *testing.T) {
	fs := vfs.NewMem()
	src := openOn(t, fs, "/src")
	other := src.NewShuffle("other")
	if err := other.Add(3, 9, []byte("w"), []byte("x"), 1, []byte("not exported")); err != nil {
		t.Fatal(err)
	}
	if err := other.Flush(); err != nil {
		t.Fatal(err)
	}
	namespaces := []string{"gbk/0", "gbk/1"}
	var want []string
	for _, ns := range namespaces {
		sh, us, tw := src.NewShuffle(ns), src.NewUserState(ns), src.NewTriggerWindows(ns)
		writeAll(t, sh, us, tw, 0)
		writeAll(t, sh, us, tw, 1)
	}
	want = dump(t, src, namespacePrefix("gbk/0"), namespacePrefix("gbk/1"))
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	// Keep writing before the export runs, as the subtask does while the
	// asynchronous part writes the files.
	for _, ns := range namespaces {
		writeAll(t, src.NewShuffle(ns), src.NewUserState(ns), src.NewTriggerWindows(ns), 2)
	}
	if now := dump(t, src, namespacePrefix("gbk/0"), namespacePrefix("gbk/1")); fmt.Sprint(now) == fmt.Sprint(want) {
		t.Fatal("the writes after the snapshot changed nothing; the test proves nothing")
	}
	if err := fs.MkdirAll("/chk", 0o755); err != nil {
		t.Fatal(err)
	}
	created := 0
	st, err := snap.Export(namespaces, func() (vfs.File, error) {
		created++
		return fs.Create("/chk/part.sst", vfs.WriteCategoryUnspecified)
	})
	if err != nil {
		t.Fatal(err)
	}
	if created != 1 || st.Records != int64(len(want)) || st.KeyBytes == 0 || st.ValueBytes == 0 {
		t.Fatalf("export created %d files, stats %+v; want 1 file of %d records", created, st, len(want))
	}
	dst := openOn(t, fs, "/dst")
	if err := dst.Import(context.Background(), fs, []string{"/chk/part.sst"}); err != nil {
		t.Fatal(err)
	}
	got := dump(t, dst, namespacePrefix("gbk/0"), namespacePrefix("gbk/1"))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("imported %d records, want the %d as of the snapshot", len(got), len(want))
	}
	if n := dump(t, dst, namespacePrefix("other")); len(n) != 0 {
		t.Errorf("a namespace not exported was imported: %v", n)
	}
	if _, err := fs.Stat("/chk/part.sst"); err != nil {
		t.Errorf("import consumed the checkpoint's file: %v", err)
	}
	// The imported state reads back through the operators' own API.
	tw := dst.NewTriggerWindows("gbk/1")
	var vals []string
	id := WindowID{KeyGroup: 7, End: 1, Key: []byte("k7"), Window: []byte("w1")}
	if err := tw.Values(id, func(v []byte) error { vals = append(vals, string(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(vals) != "[tv1]" {
		t.Errorf("window values after import = %v, want [tv1]", vals)
	}
	txn := dst.NewUserState("gbk/0").Begin()
	defer txn.Abort()
	bag, err := txn.BagRead(Cell{KeyGroup: 3, Window: []byte("gw"), Key: []byte("u3"), Transform: "t", StateID: "bag"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bag) == 0 {
		t.Error("a bag written before the snapshot is empty after import")
	}
}

func TestExportOfNothingWritesNoFile(t *testing.T) {
	s := openOn(t, vfs.NewMem(), "/db")
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	st, err := snap.Export([]string{"empty"}, func() (vfs.File, error) {
		t.Fatal("create called for an empty export")
		return nil, nil
	})
	if err != nil || st.Records != 0 {
		t.Fatalf("Export = %+v, %v", st, err)
	}
	if err := s.Import(context.Background(), vfs.NewMem(), nil); err != nil {
		t.Fatalf("Import of nothing = %v", err)
	}
}

func TestExportFailsOnAFailingFile(t *testing.T) {
	s := openOn(t, vfs.NewMem(), "/db")
	sh := s.NewShuffle("ns")
	sh.Add(1, 1, []byte("w"), []byte("k"), 1, []byte("v"))
	sh.Flush()
	snap, _ := s.Snapshot()
	defer snap.Close()
	_, err := snap.Export([]string{"ns"}, func() (vfs.File, error) { return nil, fmt.Errorf("no space left on device") })
	if err == nil {
		t.Fatal("Export succeeded though its file could not be created")
	}
}
