package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/jackc/pgx/v5"

	"github.com/weir-runner/weir/pgio"
)

// billing is one billing pane: a row of the PostgreSQL billing table.
type billing struct {
	Campaign    string `beam:"campaign"`
	WindowStart int64  `beam:"window_start"` // Unix milliseconds
	Clicks      int64  `beam:"clicks"`
	Pane        int64  `beam:"pane_index"`
	Timing      string `beam:"timing"`
}

// billingRow counts a window's clicks of one campaign, as row does, into
// a billing row.
func billingRow(pn beam.PaneInfo, w beam.Window, campaign string, ones func(*int) bool) billing {
	n, one := 0, 0
	for ones(&one) {
		n += one
	}
	return billing{Campaign: campaign, WindowStart: w.(window.IntervalWindow).Start.Milliseconds(),
		Clicks: int64(n), Pane: pn.Index, Timing: fmt.Sprint(pn.Timing)}
}

// writeBilling upserts the billing panes into table, keyed by campaign and
// window start: each late pane, accumulating, replaces the window's row.
// The panes of one window come from one group-by-key key, in pane order,
// and the upsert keeps a key's last row.
func writeBilling(s beam.Scope, conn, table string, grouped beam.PCollection) {
	pgio.Write(s, pgio.WriteConfig{Connection: conn, Table: table, Mode: pgio.ModeUpsert,
		Key: []string{"campaign", "window_start"}}, beam.ParDo(s, billingRow, grouped))
}

// makeBillingTable makes the table unless it exists: the sink writes into
// a table, it does not make one.
func makeBillingTable(conn, table string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		return fmt.Errorf("billing table: %w", err)
	}
	defer c.Close(ctx)
	name, err := pgio.SplitName(table)
	if err != nil {
		return fmt.Errorf("billing table: %w", err)
	}
	_, err = c.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		campaign text NOT NULL,
		window_start bigint NOT NULL,
		clicks bigint NOT NULL,
		pane_index bigint NOT NULL,
		timing text NOT NULL,
		PRIMARY KEY (campaign, window_start))`, pgx.Identifier(name).Sanitize()))
	if err != nil {
		return fmt.Errorf("billing table %s: %w", table, err)
	}
	return nil
}

// printBillingTable prints the table as the job left it.
func printBillingTable(conn, table string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		return fmt.Errorf("billing table: %w", err)
	}
	defer c.Close(ctx)
	name, _ := pgio.SplitName(table)
	rows, err := c.Query(ctx, fmt.Sprintf(`SELECT campaign, window_start, clicks, pane_index, timing FROM %s ORDER BY campaign, window_start`,
		pgx.Identifier(name).Sanitize()))
	if err != nil {
		return fmt.Errorf("billing table %s: %w", table, err)
	}
	bs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[billing])
	if err != nil {
		return fmt.Errorf("billing table %s: %w", table, err)
	}
	fmt.Printf("billing table %s in PostgreSQL (%d rows, upserted exactly once per pane):\n", table, len(bs))
	for _, b := range bs {
		start := time.UnixMilli(b.WindowStart).UTC().Format("15:04")
		fmt.Printf("  %-12s %s  %4d clicks  (pane %d, %s)\n", b.Campaign, start, b.Clicks, b.Pane, b.Timing)
	}
	return nil
}
