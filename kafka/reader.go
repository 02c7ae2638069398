package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/watermarkmgr"
)

// ReaderOptions are what a Reader needs besides its configuration.
type ReaderOptions struct {
	// Name names the source in errors, job messages and metrics: the
	// transform's unique name.
	Name string
	// Clock gives processing time; default the wall clock.
	Clock Clock
	// Groups holds the job's alignment groups; needed when the
	// configuration names one.
	Groups *Groups
	// OnError hears every error the reader retries; nil drops them.
	OnError func(error)
	// PollWait bounds how long one Poll waits for records, so idleness,
	// alignment and bounded read times are checked at least this often;
	// default 200 ms.
	PollWait time.Duration
	// MaxPoll bounds the records one Poll returns; default 1024.
	MaxPoll int
	// ClientOpts are added to the franz-go client's options.
	ClientOpts []kgo.Opt
	// Resume, if set, is the position of a restored reader (Position at a
	// checkpoint): partitions it lists start at their recorded next
	// offset instead of the configured start; others (added since) start
	// as configured.
	Resume *Position
	// Assign is the reader's share of the partitions when the read runs
	// as several subtasks; the zero value takes them all.
	Assign Assignment
	// Budget is shared by the subtasks of a bounded read (MaxRecords);
	// nil makes one of this reader alone.
	Budget *Budget
}

// Record is a record as the reader delivers it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte // nil for a record without a key
	Value     []byte // nil for a record without a value (a tombstone)
	EventTime mtime.Time
	// Timestamp is the record's own Kafka timestamp in milliseconds, and
	// TimestampType its kind (-1 none, 0 create time, 1 log append time),
	// whatever the timestamp policy made of them; for WithMetadata.
	Timestamp     int64
	TimestampType int8
	Headers       []kgo.RecordHeader
}

// Reader consumes the partitions of a source's topics. See the package
// documentation. Poll, Watermark and Close belong to one goroutine; Stats
// may be called from any.
type Reader struct {
	name   string
	cfg    *kafkaio.ReadConfig
	opts   ReaderOptions
	clock  Clock
	client *kgo.Client
	parts  []partition
	index  map[string]map[int32]int // topic, partition → index in parts
	splits *watermarkmgr.Splits
	group  *alignGroup
	// hold: records past the group's bound are held, not delivered
	// (release). With an alignment group and no sample buffer.
	hold    bool
	paused  []bool // what kgo has been told
	budget  *Budget
	read    int64 // records delivered by this reader
	late    int64 // records behind the output watermark when read
	ends    time.Time
	done    bool
	statsMu sync.Mutex
	stats   Stats
	states  []watermarkmgr.SplitState // scratch
}

// Open connects, resolves the partitions and start offsets, and returns a
// reader positioned at them. Failures (unreachable brokers, a missing
// topic) are reported through OnError and retried with back-off until ctx
// is done.
func Open(ctx context.Context, cfg *kafkaio.ReadConfig, opts ReaderOptions) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka source %s: %w", opts.Name, err)
	}
	if opts.Clock == nil {
		opts.Clock = WallClock{}
	}
	if opts.PollWait <= 0 {
		opts.PollWait = 200 * time.Millisecond
	}
	if opts.MaxPoll <= 0 {
		opts.MaxPoll = 1024
	}
	if opts.OnError == nil {
		opts.OnError = func(error) {}
	}
	if err := opts.Assign.Validate(); err != nil {
		return nil, fmt.Errorf("kafka source %s: %w", opts.Name, err)
	}
	r := &Reader{name: opts.Name, cfg: cfg, opts: opts, clock: opts.Clock}
	if cfg.AlignmentGroup != "" {
		if opts.Groups == nil {
			return nil, fmt.Errorf("kafka source %s: alignment group %q but no groups to join", opts.Name, cfg.AlignmentGroup)
		}
		g, err := opts.Groups.join(cfg.AlignmentGroup, alignConfig(cfg))
		if err != nil {
			return nil, fmt.Errorf("kafka source %s: %w", opts.Name, err)
		}
		r.group = g
		// A sample buffer asks for Flink 2.3's looser bound: a partition
		// runs about that many intervals past it before it pauses.
		// Holding records at the current bound would undo that.
		r.hold = alignConfig(cfg).Buffer == 0
		// A reader whose partitions are all paused waits in its poll; it
		// must look again at least every interval, when others may have
		// moved the group's minimum.
		r.opts.PollWait = min(r.opts.PollWait, alignConfig(cfg).Interval)
	}
	copts, err := consumerOpts(cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka source %s: %w", opts.Name, err)
	}
	kopts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.BootstrapServers...),
		// An offset out of range (the records were deleted by retention)
		// fails the partition instead of silently jumping elsewhere.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchMaxWait(r.opts.PollWait),
		kgo.RetryTimeout(5 * time.Second),
		// A topic created while the reader waits for it is seen at the
		// next retry, not after kgo's default five seconds of cached
		// metadata.
		kgo.MetadataMinAge(500 * time.Millisecond),
		// Transaction markers take an offset each, after the records they
		// end. kgo skips them; seen, they move the partition's next offset
		// past them, so a partition read to its end has no lag and no
		// backlog (the alignment group may take it for dry) whether its
		// last records were written in a transaction or not.
		kgo.KeepControlRecords(),
	}, copts...)
	cl, err := kgo.NewClient(append(kopts, opts.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka source %s: %w", opts.Name, err)
	}
	r.client = cl
	adm := kadm.NewClient(cl)
	for attempt := 0; ; attempt++ {
		r.parts, err = resolve(ctx, adm, r.name, cfg, opts.Assign)
		if err == nil && cfg.Stop != "" {
			err = r.listStops(ctx, adm)
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			cl.Close()
			return nil, context.Cause(ctx)
		}
		opts.OnError(fmt.Errorf("%w (retrying)", err))
		if err := sleep(ctx, backoff(attempt)); err != nil {
			cl.Close()
			return nil, err
		}
	}
	if err := r.resume(opts.Resume); err != nil {
		cl.Close()
		return nil, err
	}
	r.resumeStops(opts.Resume)
	if cfg.MaxRecords > 0 {
		r.budget = opts.Budget
		if r.budget == nil {
			r.budget = NewBudget(cfg.MaxRecords, 1)
		}
		var read, total int64
		if pos := opts.Resume; pos != nil {
			read, total = pos.Read, pos.Total
		}
		r.budget.join(read, total)
	}
	now := r.clock.Now()
	r.splits = watermarkmgr.NewSplits(len(r.parts), watermarkmgr.SplitsConfig{
		OutOfOrderness: time.Duration(cfg.MaxOutOfOrdernessMillis) * time.Millisecond,
		IdleTimeout:    time.Duration(cfg.IdleTimeoutMillis) * time.Millisecond,
	}, now)
	if err := r.resumeWatermarks(opts.Resume); err != nil {
		cl.Close()
		return nil, err
	}
	r.paused = make([]bool, len(r.parts))
	r.index = map[string]map[int32]int{}
	consume := map[string]map[int32]kgo.Offset{}
	for i, p := range r.parts {
		if r.index[p.topic] == nil {
			r.index[p.topic] = map[int32]int{}
			consume[p.topic] = map[int32]kgo.Offset{}
		}
		r.index[p.topic][p.id] = i
		consume[p.topic][p.id] = kgo.NewOffset().At(p.start)
	}
	if cfg.MaxReadTimeMillis > 0 {
		r.ends = now.Add(time.Duration(cfg.MaxReadTimeMillis) * time.Millisecond)
	}
	cl.AddConsumePartitions(consume)
	if cfg.Stop != "" {
		// Partitions empty to their stop, or restored there, end now.
		if err := r.endStopped(); err != nil {
			cl.Close()
			return nil, err
		}
	}
	r.updateStats()
	return r, nil
}

// alignConfig is a source's alignment group configuration.
func alignConfig(cfg *kafkaio.ReadConfig) watermarkmgr.AlignConfig {
	ac := watermarkmgr.AlignConfig{
		MaxDrift: time.Duration(cfg.MaxDriftMillis) * time.Millisecond,
		Interval: time.Duration(cfg.UpdateIntervalMillis) * time.Millisecond,
		// 0: decide on the latest watermark. The bound is never stale here
		// (docs/kafka.md), so a buffer buys no speed and only loosens it.
		Buffer: 0,
	}
	if ac.Interval <= 0 {
		ac.Interval = time.Second
	}
	if cfg.SampleBuffer != nil {
		ac.Buffer = *cfg.SampleBuffer
	}
	return ac
}

// consumerOpts maps the consumer configuration weir understands onto
// franz-go options; UnknownConsumerKeys lists the rest.
func consumerOpts(cfg *kafkaio.ReadConfig) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch l := cfg.ConsumerConfig["isolation.level"]; l {
	case "", "read_uncommitted":
	case "read_committed":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	default:
		return nil, fmt.Errorf("consumer_config isolation.level %q is not read_committed or read_uncommitted", l)
	}
	if id := cfg.ConsumerConfig["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	for key, opt := range map[string]func(int32) kgo.Opt{
		"fetch.max.bytes":           func(n int32) kgo.Opt { return kgo.FetchMaxBytes(n) },
		"max.partition.fetch.bytes": func(n int32) kgo.Opt { return kgo.FetchMaxPartitionBytes(n) },
	} {
		v := cfg.ConsumerConfig[key]
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("consumer_config %s %q is not a positive number of bytes", key, v)
		}
		opts = append(opts, opt(int32(n)))
	}
	return opts, nil
}

// consumerKeys are the consumer_config keys the reader uses.
var consumerKeys = map[string]bool{"isolation.level": true, "client.id": true, "group.id": true, "auto.offset.reset": true,
	"fetch.max.bytes": true, "max.partition.fetch.bytes": true}

// UnknownConsumerKeys returns the consumer_config keys the reader ignores.
func UnknownConsumerKeys(cfg *kafkaio.ReadConfig) []string {
	return unknownKeys(cfg.ConsumerConfig, consumerKeys)
}

// Done reports whether a bounded read has ended, or Stop ended the read.
func (r *Reader) Done() bool { return r.done }

// Stop ends the read where it is, as a bounded read ends at its bound:
// every partition ends, so the watermark goes to +inf, the reader leaves
// its alignment group, and Poll returns nothing more. Records held back by
// alignment are not delivered; the position, which counts delivered
// records only, leaves them unread. A drained job's source stops so.
func (r *Reader) Stop() error {
	if r.done {
		return nil
	}
	return r.finish()
}

// Poll waits up to PollWait for records and returns them, in offset order
// per partition. It also moves idleness and alignment on, and ends a
// bounded read once it has read MaxRecords or run MaxReadTime. The
// records' byte slices are the reader's until the next Poll.
//
// With an alignment group (and no sample buffer, whose looser bound lets
// a partition run past it), a partition delivers no record past the
// group's bound (watermarkmgr.HoldBound.Admits): such records stay held
// in the reader, the partition stays paused for fetching, and they are
// delivered, in offset order, once the bound has moved past them. A
// partition's watermark, its late records and its next offset (Position)
// count delivered records only.
func (r *Reader) Poll(ctx context.Context) ([]Record, error) {
	if r.done {
		return nil, nil
	}
	if !r.ends.IsZero() && !r.clock.Now().Before(r.ends) {
		return nil, r.finish()
	}
	if r.budget != nil {
		if r.budget.exhausted() {
			return nil, r.finish()
		}
		// The read's other subtasks must add what a restored one had read
		// before any reads more.
		select {
		case <-r.budget.Ready():
		default:
			return nil, r.waitBudget(ctx)
		}
	}
	var out []Record
	if r.hold {
		// Other readers of the group may have moved the bound since the
		// last poll: deliver what that frees first, without waiting on a
		// fetch.
		var err error
		if out, err = r.release(out, r.clock.Now()); err != nil {
			return nil, err
		}
		if len(out) > 0 {
			return r.endPoll(out, r.clock.Now(), false)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, r.opts.PollWait)
	fetches := r.client.PollRecords(pctx, r.opts.MaxPoll)
	cancel()
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := r.fetchErrors(fetches); err != nil {
		return nil, err
	}
	now := r.clock.Now()
	var err error
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		i, ok := r.index[fp.Topic][fp.Partition]
		if !ok || err != nil || r.ended(i) {
			return
		}
		p := &r.parts[i]
		if fp.HighWatermark >= 0 {
			p.high = fp.HighWatermark
		}
		for _, rec := range fp.Records {
			if p.stop >= 0 && rec.Offset >= p.stop {
				break // past the partition's end: not read
			}
			if rec.Attrs.IsControl() {
				p.skipTo = rec.Offset + 1
				p.skip()
				continue
			}
			t, terr := r.eventTime(rec, now)
			if terr != nil {
				err = terr
				return
			}
			if r.hold {
				// Delivered by release below, now or once the bound allows.
				p.held = append(p.held, heldRecord{rec: rec, t: t})
				continue
			}
			// A bounded read's subtasks share max_records: the record is
			// delivered only if the budget has one left for it.
			if r.budget != nil && !r.budget.take() {
				return
			}
			if err = r.deliver(i, rec, t, now, &out); err != nil {
				return
			}
		}
		if len(p.held) > 0 {
			// Records to deliver: the partition is active, not idle, not dry.
			if serr := r.splits.Pending(watermarkmgr.SplitID(i), now); serr != nil {
				err = fmt.Errorf("kafka source %s: topic %q partition %d: %w", r.name, p.topic, p.id, serr)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return r.endPoll(out, now, r.hold)
}

// endPoll moves idleness and alignment on after a poll's records, and ends
// a bounded read that has read MaxRecords. With release, it first
// delivers the held records the bound admits.
func (r *Reader) endPoll(out []Record, now time.Time, release bool) ([]Record, error) {
	if _, err := r.splits.Tick(now); err != nil {
		return nil, fmt.Errorf("kafka source %s: %w", r.name, err)
	}
	if release {
		var err error
		if out, err = r.release(out, now); err != nil {
			return nil, err
		}
	}
	if r.cfg.Stop != "" {
		if err := r.endStopped(); err != nil || r.done {
			return out, err
		}
	}
	if err := r.align(now); err != nil {
		return nil, err
	}
	if r.budget != nil && r.budget.exhausted() {
		return out, r.finish()
	}
	r.updateStats()
	return out, nil
}

// deliver appends record rec of partition i, at event time t, to out: the
// partition's watermark and next offset move past it.
func (r *Reader) deliver(i int, rec *kgo.Record, t mtime.Time, now time.Time, out *[]Record) error {
	p := &r.parts[i]
	late, err := r.splits.Record(watermarkmgr.SplitID(i), t, now)
	if err != nil {
		return fmt.Errorf("kafka source %s: topic %q partition %d: %w", r.name, p.topic, p.id, err)
	}
	if late {
		r.late++
	}
	p.next = rec.Offset + 1
	p.last = rec.Timestamp
	p.read++
	r.read++
	*out = append(*out, Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
		Key: rec.Key, Value: rec.Value, EventTime: t,
		Timestamp: rec.Timestamp.UnixMilli(), TimestampType: rec.Attrs.TimestampType(), Headers: rec.Headers})
	return nil
}

// release delivers the held records the group's bound admits now, in
// offset order per partition, and appends them to out. It asks the group
// once: delivering moves the partition's watermark and so maybe the
// group's minimum and bound, but what that admits waits for the next
// poll. The source emits its watermark between polls, so a poll's records
// span at most the drift (plus one record of a partition at the minimum)
// past the watermark emitted before them. Draining every partition in one
// poll, as the bound rises, would deliver a fetch's worth of event time of
// every partition ahead of one watermark: the state the hold is for.
func (r *Reader) release(out []Record, now time.Time) ([]Record, error) {
	held := false
	for i := range r.parts {
		held = held || len(r.parts[i].held) > 0
	}
	if !held {
		return out, nil
	}
	ooo := time.Duration(r.cfg.MaxOutOfOrdernessMillis) * time.Millisecond
	b := r.group.hold(r.name, r.reportStates())
	for i := range r.parts {
		p := &r.parts[i]
		for len(p.held) > 0 {
			h := p.held[0]
			if !b.Admits(r.splits.Watermark(watermarkmgr.SplitID(i)), h.t, ooo) {
				break
			}
			if r.budget != nil && !r.budget.take() {
				return out, nil
			}
			if err := r.deliver(i, h.rec, h.t, now, &out); err != nil {
				return nil, err
			}
			p.held[0] = heldRecord{}
			p.held = p.held[1:]
		}
		if len(p.held) == 0 {
			p.held = nil
			p.skip()
		}
	}
	return out, nil
}

// reportStates returns the partitions' states as the alignment group
// reads them.
func (r *Reader) reportStates() []watermarkmgr.SplitState {
	r.states = r.splits.States(r.states[:0])
	for i := range r.states {
		// A partition known to have records left is never dry
		// (watermarkmgr.AlignConfig.DryAfter), however long its fetches
		// take; one at its log end, or not fetched yet, may be. Held
		// records are records left.
		p := &r.parts[i]
		r.states[i].Backlog = p.high > p.next || len(p.held) > 0
	}
	return r.states
}

// fetchErrors reports the errors of a poll. The poll's own timeout is not
// one. An offset out of range means records are gone from the broker: the
// read cannot go on without skipping, so it fails. Everything else kgo
// retries by itself; it is reported and the read goes on.
func (r *Reader) fetchErrors(fetches kgo.Fetches) error {
	var fatal error
	fetches.EachError(func(topic string, p int32, err error) {
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		case errors.Is(err, kerr.OffsetOutOfRange):
			fatal = fmt.Errorf("kafka source %s: topic %q partition %d: offset out of range at %d (deleted by retention?): %w",
				r.name, topic, p, r.next(topic, p), err)
		default:
			r.opts.OnError(fmt.Errorf("kafka source %s: topic %q partition %d: fetch: %w (retrying)", r.name, topic, p, err))
		}
	})
	return fatal
}

// next returns the offset a partition fetches next: after its held
// records, if any.
func (r *Reader) next(topic string, p int32) int64 {
	if i, ok := r.index[topic][p]; ok {
		if h := r.parts[i].held; len(h) > 0 {
			return h[len(h)-1].rec.Offset + 1
		}
		return r.parts[i].next
	}
	return -1
}

// eventTime assigns a record's event time by the timestamp policy.
func (r *Reader) eventTime(rec *kgo.Record, now time.Time) (mtime.Time, error) {
	switch r.cfg.TimestampPolicy {
	case kafkaio.TimeProcessing:
		return mtime.FromTime(now), nil
	case kafkaio.TimeLogAppend:
		if rec.Attrs.TimestampType() != 1 {
			return 0, fmt.Errorf("kafka source %s: topic %q partition %d offset %d: timestamp policy %s, but the record carries its producer's create time: set message.timestamp.type=LogAppendTime on the topic, or use %s",
				r.name, rec.Topic, rec.Partition, rec.Offset, kafkaio.TimeLogAppend, kafkaio.TimeCreate)
		}
	}
	return clampMillis(rec.Timestamp.UnixMilli()), nil
}

// clampMillis turns Kafka's milliseconds into an event time Beam accepts.
// Records without a timestamp (-1, from pre-0.10 producers) land at the
// minimum.
func clampMillis(ms int64) mtime.Time {
	return min(max(mtime.Time(ms), mtime.MinTimestamp), mtime.MaxTimestamp)
}

// align reports the partitions to the alignment group and pauses or
// resumes single partitions as it decides. A partition with held records
// stays paused whatever the decision: it has its records, and fetching
// more would only hold more. Its activity clock stops with it, so it
// never goes idle or dry while it waits.
func (r *Reader) align(now time.Time) error {
	if r.group == nil {
		return nil
	}
	decisions := r.group.sync(r.name, r.reportStates(), now)
	var pause, resume map[string][]int32
	for i, p := range decisions {
		if i >= len(r.parts) || r.ended(i) {
			continue
		}
		p = p || len(r.parts[i].held) > 0
		if p == r.paused[i] {
			continue
		}
		part := r.parts[i]
		var err error
		if p {
			pause = addTP(pause, part.topic, part.id)
			err = r.splits.Pause(watermarkmgr.SplitID(i), now)
		} else {
			resume = addTP(resume, part.topic, part.id)
			err = r.splits.Resume(watermarkmgr.SplitID(i), now)
		}
		if err != nil {
			return fmt.Errorf("kafka source %s: topic %q partition %d: %w", r.name, part.topic, part.id, err)
		}
		r.paused[i] = p
	}
	if pause != nil {
		r.client.PauseFetchPartitions(pause)
	}
	if resume != nil {
		r.client.ResumeFetchPartitions(resume)
	}
	return nil
}

func addTP(m map[string][]int32, topic string, p int32) map[string][]int32 {
	if m == nil {
		m = map[string][]int32{}
	}
	m[topic] = append(m[topic], p)
	return m
}

// finish ends a bounded read: every partition ends, so the watermark goes
// to +inf, and the reader leaves its alignment group.
func (r *Reader) finish() error {
	r.done = true
	for i := range r.parts {
		if err := r.splits.End(watermarkmgr.SplitID(i)); err != nil {
			return fmt.Errorf("kafka source %s: %w", r.name, err)
		}
	}
	if r.group != nil {
		r.group.leave(r.name)
	}
	r.updateStats()
	return nil
}

// Watermark returns the source's output watermark, the minimum over its
// partitions that are neither idle nor ended, and whether it advanced
// since the last call.
func (r *Reader) Watermark() (mtime.Time, bool) { return r.splits.Emit() }

// Status is what the reader tells its consumers besides its watermark:
// idle while every partition it owns that has not ended is idle, or when
// it owns none (watermarkmgr.Splits.Status).
func (r *Reader) Status() watermarkmgr.Status { return r.splits.Status() }

// waitBudget waits, up to PollWait, for the read's other subtasks to join
// its budget.
func (r *Reader) waitBudget(ctx context.Context) error {
	t := time.NewTimer(r.opts.PollWait)
	defer t.Stop()
	select {
	case <-r.budget.Ready():
	case <-t.C:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

// PausedPartitions returns the partitions kgo is told not to fetch.
func (r *Reader) PausedPartitions() map[string][]int32 { return r.client.PauseFetchPartitions(nil) }

// Close leaves the alignment group and closes the client.
func (r *Reader) Close() {
	if r.group != nil {
		r.group.leave(r.name)
	}
	r.client.Close()
}
