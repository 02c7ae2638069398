package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/twophase"
)

// TxnOptions are what a TxnWriter needs besides its configuration.
type TxnOptions struct {
	// Name names the sink subtask in errors.
	Name string
	// TransactionalID is the subtask's transactional id; its marker group
	// is TransactionalID + ".marker". Required.
	TransactionalID string
	// ClientOpts are added to the franz-go client's options.
	ClientOpts []kgo.Opt
}

// TxnWriter writes a sink subtask's committed epochs to Kafka: each
// commit is one transaction holding the records and a marker, an offset
// commit of the marker group on partition 0 of the topic whose metadata
// holds the markers of the recent runs (Markers: for each run, the epoch
// below which it has committed everything). Kafka applies the offset
// commit atomically with the records, so the markers say exactly which
// epochs' records are in the topic.
//
// No transaction stays open between calls: Commit begins and ends one,
// and on any failure aborts it with the same client. The writer's first
// client initialises the producer id afresh, which fences whatever an
// earlier process with the same transactional id left open; it keeps that
// client for its life. A new client would fence a writer that had fenced
// this one (a second job writing as this one): the two would take the
// id from each other at every retry, both writing. The same client's
// abort re-initialises with its own producer id and epoch instead, which
// Kafka refuses with ProducerFenced once another writer holds the id:
// that error is permanent, and the fenced writer stops.
type TxnWriter struct {
	name  string
	topic string
	txnID string
	group string
	kopts []kgo.Opt

	client  *kgo.Client // nil until needed
	adm     *kadm.Client
	topicID [16]byte
	haveID  bool
	// unended is set while a failed transaction may still be open: the
	// abort after the failure failed too, and is tried again before the
	// next transaction begins.
	unended bool
	// grouped says the marker group holds an offset for the topic's
	// partition 0 (Markers).
	grouped bool
}

// NewTxnWriter returns a transactional writer to cfg's topic. It does not
// connect until first used.
func NewTxnWriter(cfg *kafkaio.WriteConfig, opts TxnOptions) (*TxnWriter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka sink %s: %w", opts.Name, err)
	}
	if opts.TransactionalID == "" {
		return nil, fmt.Errorf("kafka sink %s: no transactional id", opts.Name)
	}
	popts, err := producerOpts(cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka sink %s: %w", opts.Name, err)
	}
	kopts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.BootstrapServers...),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.TransactionalID(opts.TransactionalID),
		kgo.RecordDeliveryTimeout(30 * time.Second),
		kgo.RetryTimeout(10 * time.Second),
	}, popts...)
	return &TxnWriter{name: opts.Name, topic: cfg.Topic, txnID: opts.TransactionalID,
		group: opts.TransactionalID + ".marker", kopts: append(kopts, opts.ClientOpts...)}, nil
}

// connect makes the client if there is none, and initialises its producer
// id, which aborts (or completes) a transaction an earlier client with
// the same transactional id left open.
func (w *TxnWriter) connect(ctx context.Context) error {
	if w.client != nil {
		return nil
	}
	cl, err := kgo.NewClient(w.kopts...)
	if err != nil {
		return twophase.Permanent(err)
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return fmt.Errorf("init producer id of %q: %w", w.txnID, err)
	}
	w.client, w.adm = cl, kadm.NewClient(cl)
	return nil
}

// abort ends a failed transaction: it drops the records not yet sent and
// aborts with the same client, re-initialising its producer id with the
// id and epoch it has if the failure calls for it. An error that says
// another writer holds the transactional id is permanent.
func (w *TxnWriter) abort(ctx context.Context) error {
	err := w.client.AbortBufferedRecords(ctx)
	if err == nil {
		err = w.client.EndTransaction(ctx, kgo.TryAbort)
	}
	w.unended = err != nil
	if err != nil {
		return classify(fmt.Errorf("abort a failed transaction of %q: %w", w.txnID, err))
	}
	return nil
}

// Close aborts what the client has open, best effort and bounded, and
// closes it; nothing is open between commits.
func (w *TxnWriter) Close() {
	if w.client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.client.AbortBufferedRecords(ctx)
	_ = w.client.EndTransaction(ctx, kgo.TryAbort)
	w.client.Close()
	w.client, w.adm = nil, nil
}

// Markers returns the marker group's markers: for each recent run, the
// epoch below which it has committed everything; none when nothing was
// committed. It reads committed offsets only (RequireStable). Kafka
// answers UNSTABLE_OFFSET_COMMIT until the coordinator has written the
// markers of the last transaction that committed the group's offsets,
// which it does after EndTxn returns: right after this writer's own
// commit, that is the usual answer. Markers waits it out quietly for a
// while (unstableRetries) before returning it.
func (w *TxnWriter) Markers(ctx context.Context) (Markers, error) {
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		ms, found, err := w.markers(ctx)
		if err == nil && !found && !w.grouped {
			err = w.makeGroup(ctx)
		}
		w.grouped = w.grouped || err == nil
		if !errors.Is(err, kerr.UnstableOffsetCommit) || attempt == unstableRetries {
			return ms, err
		}
		if err := sleep(ctx, unstableWait); err != nil {
			return nil, err
		}
	}
}

// makeGroup gives the marker group an offset with no marker, outside any
// transaction, before the writer's first transaction. Kafka answers a
// stable read (RequireStable) of a group that has only offsets a
// transaction is still completing with no offsets at all, not with
// UNSTABLE_OFFSET_COMMIT: right after the first commit of a new group,
// its marker would read as absent, and a commit whose outcome was unknown
// would be written again. A group with an offset already answers
// UNSTABLE_OFFSET_COMMIT until the transaction is complete.
//
// Nothing of this transactional id is being committed meanwhile: the
// writer's producer id was just initialised, which completes the
// transactions of earlier writers first, and it has begun none.
func (w *TxnWriter) makeGroup(ctx context.Context) error {
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: w.topic, Partition: 0, At: 0, LeaderEpoch: -1, Metadata: Markers(nil).String()})
	resp, err := w.adm.CommitOffsets(ctx, w.group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("make marker group %q: %w", w.group, err)
	}
	return nil
}

// unstableRetries and unstableWait bound how long Markers waits for
// offsets to become stable before it reports the error (about 2 s).
const (
	unstableRetries = 100
	unstableWait    = 20 * time.Millisecond
)

// markers reads the markers; found says the group has an offset for the
// topic's partition 0.
func (w *TxnWriter) markers(ctx context.Context) (ms Markers, found bool, err error) {
	resps, err := w.adm.FetchOffsets(kadm.RequireStable(ctx), w.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read marker of group %q: %w", w.group, err)
	}
	o, ok := resps.Lookup(w.topic, 0)
	if !ok {
		return nil, false, nil
	}
	if o.Err != nil {
		return nil, true, fmt.Errorf("read marker of group %q: %w", w.group, o.Err)
	}
	return ParseMarkers(o.Metadata), true, nil
}

// Commit writes, in one transaction, the records each hands to produce,
// and the markers ms. With no record it writes nothing, markers included:
// there is nothing a restore could repeat. It returns how many records it
// committed.
func (w *TxnWriter) Commit(ctx context.Context, ms Markers, each func(produce func(key, value []byte)) error) (int, error) {
	if err := w.connect(ctx); err != nil {
		return 0, err
	}
	if w.unended {
		if err := w.abort(ctx); err != nil {
			return 0, err
		}
	}
	var mu sync.Mutex
	var prodErr error
	n := 0
	var beginErr error
	err := each(func(key, value []byte) {
		if beginErr != nil {
			return
		}
		if n == 0 {
			if beginErr = w.client.BeginTransaction(); beginErr != nil {
				return
			}
		}
		n++
		// The store reuses key and value once produce returns.
		w.client.Produce(ctx, &kgo.Record{Topic: w.topic, Key: clone(key), Value: clone(value)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				prodErr = cmp(prodErr, err)
				mu.Unlock()
			}
		})
	})
	if n == 0 && err == nil && beginErr == nil {
		return 0, nil
	}
	if err == nil {
		err = beginErr
	}
	if err == nil {
		err = w.client.Flush(ctx)
	}
	if err == nil {
		mu.Lock()
		err = prodErr
		mu.Unlock()
	}
	if err == nil {
		err = w.commitMarker(ctx, ms)
	}
	if err == nil {
		err = w.client.EndTransaction(ctx, kgo.TryCommit)
	}
	if err != nil {
		if aerr := w.abort(ctx); twophase.IsPermanent(aerr) {
			return 0, fmt.Errorf("%w (after %w)", aerr, err)
		}
		return 0, classify(err)
	}
	return n, nil
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// commitMarker adds the marker group's offset commit to the open
// transaction. franz-go commits offsets in a transaction only for a group
// it consumes in; the sink is in no group, so it sends the two requests
// itself with the transaction's producer id and epoch: AddOffsetsToTxn,
// then TxnOffsetCommit of generation -1 (a commit from outside a group,
// which Kafka allows for a group without members).
func (w *TxnWriter) commitMarker(ctx context.Context, ms Markers) error {
	if !w.haveID {
		td, err := w.adm.ListTopics(ctx, w.topic)
		if err != nil {
			return fmt.Errorf("topic id: %w", err)
		}
		d, ok := td[w.topic]
		if !ok || d.Err != nil {
			return fmt.Errorf("topic id: %w", cmp(d.Err, errors.New("topic not in metadata")))
		}
		w.topicID, w.haveID = d.ID, true
	}
	pid, epoch, err := w.client.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = w.txnID, pid, epoch, w.group
	addResp, err := add.RequestWith(ctx, w.client)
	if err != nil {
		return fmt.Errorf("add marker group %q to transaction: %w", w.group, err)
	}
	if err := kerr.ErrorForCode(addResp.ErrorCode); err != nil {
		return fmt.Errorf("add marker group %q to transaction: %w", w.group, err)
	}
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch = w.txnID, w.group, pid, epoch
	oc.Generation = -1
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic, t.TopicID = w.topic, w.topicID
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	meta := ms.String()
	p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = 0, int64(ms.newest()), -1, &meta
	t.Partitions = append(t.Partitions, p)
	oc.Topics = append(oc.Topics, t)
	ocResp, err := oc.RequestWith(ctx, w.client)
	if err != nil {
		return fmt.Errorf("commit marker of group %q: %w", w.group, err)
	}
	for _, rt := range ocResp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("commit marker of group %q: %w", w.group, err)
			}
		}
	}
	return nil
}

// permanentCodes are the Kafka errors a retry cannot fix: another live
// producer with the same transactional id (a second job writing as this
// one), missing rights, records the topic refuses.
var permanentCodes = []*kerr.Error{
	kerr.ProducerFenced, kerr.TransactionalIDAuthorizationFailed, kerr.TopicAuthorizationFailed,
	kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.InvalidTransactionTimeout,
	kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidTopicException, kerr.InvalidRecord,
}

// classify marks the errors in permanentCodes Permanent; the rest are
// retried.
func classify(err error) error {
	for _, code := range permanentCodes {
		if errors.Is(err, code) {
			return twophase.Permanent(err)
		}
	}
	return err
}
