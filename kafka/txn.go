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
// and on any failure aborts it (best effort) and drops the client. The
// next call makes a new client, whose InitProducerID fences and finishes
// whatever the old one left open, before it reads the marker.
type TxnWriter struct {
	name  string
	topic string
	txnID string
	group string
	kopts []kgo.Opt

	client  *kgo.Client // nil until needed, and after a failure
	adm     *kadm.Client
	topicID [16]byte
	haveID  bool
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

// drop aborts what the client has open, best effort and bounded, and
// closes it.
func (w *TxnWriter) drop() {
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

// Close closes the writer; nothing is open between commits.
func (w *TxnWriter) Close() { w.drop() }

// Markers returns the marker group's markers: for each recent run, the
// epoch below which it has committed everything. None when nothing was
// committed. It reads committed offsets only (RequireStable): while a
// transaction is being completed the broker answers with a retriable
// error.
func (w *TxnWriter) Markers(ctx context.Context) (Markers, error) {
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	resps, err := w.adm.FetchOffsets(kadm.RequireStable(ctx), w.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil, nil
	}
	if err != nil {
		w.drop()
		return nil, fmt.Errorf("read marker of group %q: %w", w.group, err)
	}
	o, ok := resps.Lookup(w.topic, 0)
	if !ok {
		return nil, nil
	}
	if o.Err != nil {
		w.drop()
		return nil, fmt.Errorf("read marker of group %q: %w", w.group, o.Err)
	}
	return ParseMarkers(o.Metadata), nil
}

// Commit writes, in one transaction, the records each hands to produce,
// and the markers ms. With no record it writes nothing, markers included:
// there is nothing a restore could repeat. It returns how many records it
// committed.
func (w *TxnWriter) Commit(ctx context.Context, ms Markers, each func(produce func(key, value []byte)) error) (int, error) {
	if err := w.connect(ctx); err != nil {
		return 0, err
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
		w.drop()
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
