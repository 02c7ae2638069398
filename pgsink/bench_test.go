package pgsink

import (
	"context"
	"fmt"
	"testing"

	"github.com/weir-runner/weir/internal/pgtest"
	"github.com/weir-runner/weir/pgio"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/twophase/twophasetest"
)

// BenchmarkCommit measures one commit of an epoch of 10,000 staged rows
// (id, name): reading them from the store, decoding, COPY, and for an
// upsert the INSERT ... ON CONFLICT from the staging table, over rows
// whose keys are all in the table already. It reports rows per second.
func BenchmarkCommit(b *testing.B) {
	const n = 10_000
	for _, mode := range []string{pgio.ModeInsert, pgio.ModeUpsert} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			db := pgtest.New(b)
			db.Exec(b, `CREATE TABLE people (id bigint PRIMARY KEY, name text)`)
			cfg := pgio.WriteConfig{Connection: db.URL, Table: "people", Mode: mode}
			if mode == pgio.ModeUpsert {
				cfg.Key = []string{"id"}
			}
			f := newFixtureOn(b, db, cfg, idName)
			store := twophasetest.Store(b)
			s := f.plan.NewSink("bench", 0, globalCodec(b), nil)
			pending := twophase.NewPending(store, "pg/0", "pg[0]")
			if err := s.Open(ctx, twophase.Session{Lineage: "bench", Run: "run", Staging: pending}); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var elems [][]byte
			for i := range n {
				elems = append(elems, element(encodeRow(int64(i), fmt.Sprintf("name %d", i))))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				epoch := twophase.Epoch(i)
				if mode == pgio.ModeInsert {
					db.Exec(b, `TRUNCATE people`)
				}
				if err := s.Write(ctx, epoch, elems); err != nil {
					b.Fatal(err)
				}
				c, err := s.Prepare(ctx, epoch)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := s.Commit(ctx, []twophase.Committable{{Epoch: epoch, Run: "run", Data: c}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
