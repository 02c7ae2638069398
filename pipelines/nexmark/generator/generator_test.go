package generator

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// TestJavaRandom checks the port against java.util.Random's output for
// the same seeds (Java 17: nextInt(), nextInt(13), nextInt(16),
// nextInt(1000000007), nextLong(), the bits of nextDouble(), and
// Math.round(Math.pow(10, nextDouble()*6)*100), in that order).
func TestJavaRandom(t *testing.T) {
	for _, w := range []struct {
		seed              int64
		i, i13, i16, i1e9 int32
		l                 int64
		dbits             uint64
		price             int64
	}{
		{0, -1155484576, 5, 3, 302116440, -6688467811848818630, 4603133115327553832, 384832},
		{1, -1155869325, 0, 6, 874970313, 3831662765844904176, 4599665317554862172, 64052407},
		{42, -1170105035, 7, 10, 102948884, 5694868678511409995, 4598663022256506966, 984677},
		{1000, -1244746321, 10, 9, 988461124, -988390996874898054, 4585839817552688496, 82882},
		{-7, 1155869324, 7, 10, 119890471, 2701079913633722686, 4599356373424092616, 1544},
		{123456789012345, -1421006947, 1, 13, 308132645, -2184844392376802456, 4590900991198614008, 7674743},
	} {
		r := newJavaRandom(w.seed)
		got := []any{r.nextInt(), r.nextIntN(13), r.nextIntN(16), r.nextIntN(1000000007), r.nextLong(),
			math.Float64bits(r.nextDouble()), nextPrice(&r)}
		want := []any{w.i, w.i13, w.i16, w.i1e9, w.l, w.dbits, w.price}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("seed %d: got %v, want Java's %v", w.seed, got, want)
		}
	}
}

// TestMatchesBeamJava compares every event, id, timestamp and watermark
// with what Beam Java's generator made for the same configuration
// (testdata/java/README.md).
func TestMatchesBeamJava(t *testing.T) {
	for _, tc := range []struct {
		file        string
		events      int64
		gens        int
		group       int64
		first, next int
		shape       config.RateShape
		periodSec   int
	}{
		{"a.txt.gz", 600, 3, 1, 10000, 10000, config.Sine, 600},
		{"b.txt.gz", 2000, 2, 7, 1000, 500, config.Square, 2},
		{"c.txt.gz", 600, 4, 5, 1000, 3000, config.Sine, 10},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c := config.Default()
			c.NumEvents, c.NumEventGenerators, c.OutOfOrderGroupSize = tc.events, tc.gens, tc.group
			c.FirstEventRate, c.NextEventRate, c.RateShape, c.RatePeriodSec = tc.first, tc.next, tc.shape, tc.periodSec
			g, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			want := readLines(t, filepath.Join("testdata", "java", tc.file))
			var got []string
			for i := range g.Generators() {
				for n := range g.Count(i) {
					e, ts := g.Event(i, n)
					got = append(got, fmt.Sprintf("%d %d %d %d %d %v", i, n, g.EventID(i, n), ts, g.Watermark(n), e))
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d events, Java made %d", len(got), len(want))
			}
			bad := 0
			for k := range want {
				if got[k] != want[k] && bad < 3 {
					bad++
					t.Errorf("event %d:\n got %s\nwant %s", k, got[k], want[k])
				}
			}
		})
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(z)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func all(t *testing.T, c config.Config) (*Generator, []model.Event) {
	t.Helper()
	g, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var evs []model.Event
	for i := range g.Generators() {
		for n := range g.Count(i) {
			e, _ := g.Event(i, n)
			evs = append(evs, e)
		}
	}
	return g, evs
}

// TestProportionsAndIDs checks the shape of a default stream of 100,000
// events: exactly 1:3:46 persons, auctions and bids, ids unique and
// dense, and every bid's auction and bidder, and every auction's seller,
// within the id spaces the generator has opened (plus its small leads).
func TestProportionsAndIDs(t *testing.T) {
	c := config.Default()
	g, evs := all(t, c)
	if int64(len(evs)) != c.NumEvents {
		t.Fatalf("%d events, want %d", len(evs), c.NumEvents)
	}
	var persons, auctions, bids int
	personIDs, auctionIDs := map[int64]bool{}, map[int64]bool{}
	for _, e := range evs {
		switch e.Kind() {
		case model.KindPerson:
			persons++
			personIDs[e.NewPerson.ID] = true
		case model.KindAuction:
			auctions++
			auctionIDs[e.NewAuction.ID] = true
		case model.KindBid:
			bids++
		}
	}
	if persons != 2000 || auctions != 6000 || bids != 92000 {
		t.Errorf("persons %d, auctions %d, bids %d; want 2000, 6000, 92000", persons, auctions, bids)
	}
	if len(personIDs) != persons || len(auctionIDs) != auctions {
		t.Errorf("%d distinct person ids for %d persons, %d auction ids for %d auctions", len(personIDs), persons, len(auctionIDs), auctions)
	}
	maxPerson := int64(FirstPersonID + persons)
	maxAuction := int64(FirstAuctionID + auctions)
	hot := 0
	for _, e := range evs {
		switch {
		case e.Bid != nil:
			b := e.Bid
			if b.Auction < FirstAuctionID || b.Auction >= maxAuction+auctionIDLead || b.Bidder < FirstPersonID || b.Bidder >= maxPerson+personIDLead {
				t.Fatalf("bid out of the id spaces: %v", b)
			}
			if (b.Auction-FirstAuctionID)%hotAuctionRate == 0 {
				hot++
			}
		case e.NewAuction != nil:
			if a := e.NewAuction; a.Seller < FirstPersonID || a.Seller >= maxPerson+personIDLead || a.Expires <= a.DateTime {
				t.Fatalf("auction out of shape: %v", a)
			}
		}
	}
	// HotAuctionRatio 2: about half the bids go to a hot auction.
	if share := float64(hot) / float64(bids); share < 0.45 || share > 0.6 {
		t.Errorf("%.2f of bids on hot auctions, want about 0.5", share)
	}
	_ = g
}

// TestTimestampsAndWatermark checks each generator's timeline: with
// OutOfOrderGroupSize n the timestamps are monotone between groups of n
// and the watermark of a row is at or below every later event.
func TestTimestampsAndWatermark(t *testing.T) {
	// Not 7: 953 is 1 modulo 7 (and 8, 14, 17, ...), which leaves those groups
	// in order, in Beam as here.
	for _, group := range []int64{1, 5, 100} {
		c := config.Default()
		c.NumEvents, c.NumEventGenerators, c.OutOfOrderGroupSize = 20000, 4, group
		g, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		rows := g.Rows()
		// The earliest timestamp of each row and later, from the end.
		minFrom := make([]int64, rows+1)
		minFrom[rows] = math.MaxInt64
		for n := rows - 1; n >= 0; n-- {
			minFrom[n] = min(minFrom[n+1], g.Timestamp(n))
		}
		outOfOrder := 0
		for n := range rows {
			if g.Watermark(n) > minFrom[n] {
				t.Fatalf("group %d: watermark %d of row %d is past a later event at %d", group, g.Watermark(n), n, minFrom[n])
			}
			if n > 0 && g.Timestamp(n) < g.Timestamp(n-1) {
				outOfOrder++
				if n/group == (n-1)/group+1 {
					t.Fatalf("group %d: row %d goes back in time across groups", group, n)
				}
			}
		}
		if (group == 1) != (outOfOrder == 0) {
			t.Errorf("group %d: %d rows earlier than the one before", group, outOfOrder)
		}
		// 10,000 events/s over 4 generators: each steps 0.4 ms a row.
		if d := g.Timestamp(rows-1) - g.Timestamp(0); d < 1900 || d > 2100 {
			t.Errorf("group %d: %d rows span %d ms, want about 2000", group, rows, d)
		}
	}
}

// TestDelays checks the occasional delays of a rate-limited stream: about
// ProbDelayedEvent of events are held, each released at a later row no
// more than OccasionalDelaySec further on, and HeldBefore finds exactly
// the held events that cross a row.
func TestDelays(t *testing.T) {
	c := config.Default()
	c.NumEvents, c.NumEventGenerators, c.IsRateLimited = 20000, 2, true
	g, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	rows := []int64{1, 57, 400, 9999}
	crossing := map[int64]map[Held]bool{} // row -> events held across it
	for i := range g.Generators() {
		for n := range g.Count(i) {
			r, ok := g.Release(i, n)
			if !ok {
				continue
			}
			held++
			if r <= n || g.DueMillis(r)-g.DueMillis(n) > c.OccasionalDelaySec*1000+g.DueMillis(1) {
				t.Fatalf("event %d/%d released at row %d", i, n, r)
			}
			for _, row := range rows {
				if row <= n || row > r {
					continue
				}
				if crossing[row] == nil {
					crossing[row] = map[Held]bool{}
				}
				crossing[row][Held{Gen: i, N: n, Release: r}] = true
			}
		}
	}
	if share := float64(held) / 20000; share < 0.08 || share > 0.12 {
		t.Errorf("%.3f of events held, want about %.2f", share, c.ProbDelayedEvent)
	}
	for _, row := range rows {
		got := map[Held]bool{}
		for i := range g.Generators() {
			for _, h := range g.HeldBefore(i, row) {
				got[h] = true
			}
		}
		if len(got) != len(crossing[row]) {
			t.Errorf("row %d: HeldBefore found %d held events crossing it, want %d", row, len(got), len(crossing[row]))
		}
		for h := range crossing[row] {
			if !got[h] {
				t.Errorf("row %d: HeldBefore misses %+v", row, h)
			}
		}
	}
	c.IsRateLimited = false
	if g, _ := New(c); g.DelaysOn() {
		t.Error("delays on without rate limiting")
	}
}

func TestSeedChangesEvents(t *testing.T) {
	c := config.Default()
	c.NumEvents, c.NumEventGenerators = 100, 1
	g0, _ := New(c)
	c.Seed = 99
	g1, _ := New(c)
	same := 0
	for n := range int64(100) {
		a, _ := g0.Event(0, n)
		b, _ := g1.Event(0, n)
		if a.Kind() != b.Kind() {
			t.Fatalf("event %d changed kind with the seed", n)
		}
		if a.String() == b.String() {
			same++
		}
	}
	if same > 5 {
		t.Errorf("%d of 100 events the same under another seed", same)
	}
}

func TestValidate(t *testing.T) {
	c := config.Default()
	c.NumEventGenerators, c.ProbDelayedEvent, c.RateShape = 0, 2, "zigzag"
	if _, err := New(c); err == nil {
		t.Fatal("New accepted an invalid configuration")
	}
}
