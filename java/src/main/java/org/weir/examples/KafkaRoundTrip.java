package org.weir.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.coders.KvCoder;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.io.kafka.KafkaIO;
import org.apache.beam.sdk.io.kafka.KafkaRecord;
import org.apache.beam.sdk.io.kafka.KafkaSourceDescriptor;
import org.apache.beam.sdk.options.Default;
import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.Validation;
import org.apache.beam.sdk.testing.PAssert;
import org.apache.beam.sdk.transforms.Create;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.TypeDescriptors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Beam Java's own KafkaIO on weir, against any Kafka broker (java/run.sh uses kfake, franz-go's
 * fake broker, bin/kfake). Three jobs, one after the other:
 *
 * <ol>
 *   <li>write: --records KVs (key-i, value-i) to --topic with KafkaIO.write, a batch job;
 *   <li>read: KafkaIO.read of the topic, bounded by withMaxNumRecords so that the job ends;
 *   <li>read-sdf: the same records through KafkaIO's splittable DoFn, one KafkaSourceDescriptor
 *       per partition, bounded by the offsets the write left.
 * </ol>
 *
 * <p>Each read checks with PAssert that exactly the written records came back. Everything runs in
 * the Java SDK harness as Java expands it: no expansion service, and weir's own Kafka transforms
 * (for Python's cross-language kafkaio) are not involved. It prints one line per job, PASS or what
 * went wrong, and exits 1 unless every job ended DONE.
 *
 * <pre>
 * bin/kfake --port=9092 &amp;
 * weir serve --job-port=8099 &amp;
 * java -cp "target/classes:$(cat target/classpath.txt)" org.weir.examples.KafkaRoundTrip \
 *     --bootstrapServers=127.0.0.1:9092 --topic=roundtrip \
 *     --runner=WeirRunner --jobEndpoint=localhost:8099 --defaultEnvironmentType=LOOPBACK
 * </pre>
 */
public class KafkaRoundTrip {
  /** The example's own flags. */
  public interface Options extends PipelineOptions {
    @Description("Kafka's bootstrap servers, host:port[,host:port...]")
    @Validation.Required
    String getBootstrapServers();

    void setBootstrapServers(String value);

    @Description("the topic to write and read back (default: a new name per run)")
    String getTopic();

    void setTopic(String value);

    @Description("how many records to write and read back")
    @Default.Integer(100)
    int getRecords();

    void setRecords(int value);
  }

  static List<KV<String, String>> records(int n) {
    List<KV<String, String>> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(KV.of("key-" + i, "value-" + i));
    }
    return out;
  }

  /** The first job: the records, produced to the topic by KafkaIO's writer DoFn. */
  static void write(Pipeline p, Options o) {
    p.apply(
            "Records",
            Create.of(records(o.getRecords()))
                .withCoder(KvCoder.of(StringUtf8Coder.of(), StringUtf8Coder.of())))
        .apply(
            "Write",
            KafkaIO.<String, String>write()
                .withBootstrapServers(o.getBootstrapServers())
                .withTopic(o.getTopic())
                .withKeySerializer(StringSerializer.class)
                .withValueSerializer(StringSerializer.class));
  }

  /**
   * The second job: the topic from its earliest offsets (a new consumer starts at the latest
   * ones, which would read nothing the first job wrote), stopped after as many records as were
   * written. containsInAnyOrder checks that those are exactly the written ones, each once: a
   * record lost, duplicated or garbled fails the job.
   */
  static void read(Pipeline p, Options o) {
    PCollection<KV<String, String>> back =
        p.apply(
            "Read",
            KafkaIO.<String, String>read()
                .withBootstrapServers(o.getBootstrapServers())
                .withTopic(o.getTopic())
                .withKeyDeserializer(StringDeserializer.class)
                .withValueDeserializer(StringDeserializer.class)
                .withConsumerConfigUpdates(
                    Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"))
                .withMaxNumRecords(o.getRecords())
                .withoutMetadata());
    PAssert.that(back).containsInAnyOrder(records(o.getRecords()));
  }

  /**
   * The third job: the same records through KafkaIO's splittable DoFn (ReadFromKafkaDoFn), one
   * KafkaSourceDescriptor per partition with the offsets the write left, [first, end), as its
   * restriction. KafkaIO.read above does not run it: withMaxNumRecords is only supported by the
   * UnboundedSource read, so Java expands that one to plain DoFns; this is the read KafkaIO.read
   * runs when it is not bounded, bounded here by the descriptors' stop offsets so the job ends.
   * With several partitions the descriptors share bundles, which weir splits between them.
   */
  static void readSdf(Pipeline p, Options o, List<KafkaSourceDescriptor> partitions) {
    PCollection<KV<String, String>> back =
        p.apply("Partitions", Create.of(partitions))
            .apply(
                "Read",
                KafkaIO.<String, String>readSourceDescriptors()
                    .withBootstrapServers(o.getBootstrapServers())
                    .withKeyDeserializer(StringDeserializer.class)
                    .withValueDeserializer(StringDeserializer.class))
            .apply(
                "KVs",
                MapElements.into(
                        TypeDescriptors.kvs(TypeDescriptors.strings(), TypeDescriptors.strings()))
                    .via((KafkaRecord<String, String> r) -> r.getKV()));
    PAssert.that(back).containsInAnyOrder(records(o.getRecords()));
  }

  /** The topic's partitions as descriptors of what they hold now, read by a consumer here. */
  static List<KafkaSourceDescriptor> partitions(String bootstrapServers, String topic) {
    Map<String, Object> config =
        Map.of(
            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo info : consumer.partitionsFor(topic)) {
        tps.add(new TopicPartition(topic, info.partition()));
      }
      Map<TopicPartition, Long> first = consumer.beginningOffsets(tps);
      Map<TopicPartition, Long> end = consumer.endOffsets(tps);
      List<KafkaSourceDescriptor> out = new ArrayList<>();
      for (TopicPartition tp : tps) {
        out.add(KafkaSourceDescriptor.of(tp, first.get(tp), null, end.get(tp), null, null));
      }
      return out;
    }
  }

  /**
   * Runs one job with options of its own, parsed anew from the flags: a LOOPBACK run sets options
   * of its worker (bundleProcessorCacheTimeout, a Duration) that a second submission of the same
   * object could not serialize.
   */
  static String run(String name, String[] args, String topic, BiConsumer<Pipeline, Options> build) {
    Options options = PipelineOptionsFactory.fromArgs(args).withValidation().as(Options.class);
    options.setTopic(topic);
    options.setJobName("java-kafka-" + name + "-" + System.nanoTime());
    Pipeline p = Pipeline.create(options);
    try {
      build.accept(p, options);
      PipelineResult.State state = p.run().waitUntilFinish();
      return state == PipelineResult.State.DONE ? "PASS" : "FAIL: the job ended " + state;
    } catch (RuntimeException e) {
      return "FAIL: " + e;
    }
  }

  public static void main(String[] args) {
    Options options = PipelineOptionsFactory.fromArgs(args).withValidation().as(Options.class);
    String topic = options.getTopic();
    if (topic == null || topic.isEmpty()) {
      topic = "weir-java-roundtrip-" + System.nanoTime();
    }
    int n = options.getRecords();
    // The read starts only once the write has ended: it stops after a count of records, and
    // records not yet written would keep it waiting.
    String wrote = run("write", args, topic, KafkaRoundTrip::write);
    System.out.println("kafka write (" + n + " records to " + topic + "): " + wrote);
    if (!wrote.equals("PASS")) {
      System.exit(1);
    }
    String read = run("read", args, topic, KafkaRoundTrip::read);
    System.out.println("kafka read (KafkaIO.read, withMaxNumRecords " + n + "): " + read);
    List<KafkaSourceDescriptor> partitions = partitions(options.getBootstrapServers(), topic);
    String sdf = run("read-sdf", args, topic, (p, o) -> readSdf(p, o, partitions));
    System.out.println(
        "kafka read-sdf (readSourceDescriptors, " + partitions.size() + " partitions): " + sdf);
    System.exit(read.equals("PASS") && sdf.equals("PASS") ? 0 : 1);
  }
}
