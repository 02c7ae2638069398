package org.weir.examples;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.io.TextIO;
import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.transforms.Count;
import org.apache.beam.sdk.transforms.Create;
import org.apache.beam.sdk.transforms.FlatMapElements;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.TypeDescriptors;

/**
 * Counts the words of a small text (or of --input) on any Beam runner, writes the counts to
 * --output and prints them: weir's Java example, as pipelines/wordcount (Go) and
 * pipelines/python/wordcount.py.
 *
 * <pre>
 * weir serve --job-port=8099 &amp;
 * java -cp "target/classes:$(cat target/classpath.txt)" org.weir.examples.WordCount \
 *     --runner=WeirRunner --jobEndpoint=localhost:8099 --defaultEnvironmentType=LOOPBACK
 * </pre>
 */
public class WordCount {
  static final String TEXT =
      "It was the best of times, it was the worst of times,\n"
          + "it was the age of wisdom, it was the age of foolishness,\n"
          + "it was the epoch of belief, it was the epoch of incredulity,\n"
          + "it was the season of Light, it was the season of Darkness,\n"
          + "it was the spring of hope, it was the winter of despair.";

  private static final Pattern WORD = Pattern.compile("[a-zA-Z']+");

  /** The example's own flags. */
  public interface Options extends PipelineOptions {
    @Description("a text file to count (default: a short embedded text)")
    String getInput();

    void setInput(String value);

    @Description("prefix of the output files (default: a temporary folder)")
    String getOutput();

    void setOutput(String value);
  }

  static List<String> words(String line) {
    List<String> out = new ArrayList<>();
    Matcher m = WORD.matcher(line.toLowerCase());
    while (m.find()) {
      out.add(m.group());
    }
    return out;
  }

  public static void main(String[] args) throws IOException {
    Options options = PipelineOptionsFactory.fromArgs(args).withValidation().as(Options.class);
    String output = options.getOutput();
    if (output == null || output.isEmpty()) {
      output = Files.createTempDirectory("wordcount-").resolve("counts").toString();
    }
    Pipeline p = Pipeline.create(options);
    var lines =
        options.getInput() != null
            ? p.apply("Read", TextIO.read().from(options.getInput()))
            : p.apply("Lines", Create.of(Arrays.asList(TEXT.split("\n"))));
    lines
        .apply(
            "Words",
            FlatMapElements.into(TypeDescriptors.strings()).via((String line) -> words(line)))
        .apply("Count", Count.perElement())
        .apply(
            "Format",
            MapElements.into(TypeDescriptors.strings())
                .via((KV<String, Long> kv) -> kv.getKey() + ": " + kv.getValue()))
        .apply("Write", TextIO.write().to(output));
    PipelineResult.State state = p.run().waitUntilFinish();
    if (state != PipelineResult.State.DONE) {
      System.err.println("wordcount: the job ended " + state);
      System.exit(1);
    }
    // The workers wrote the counts; the submitting process prints them.
    List<String> counts = new ArrayList<>();
    Path out = Paths.get(output);
    Path dir = out.toAbsolutePath().getParent();
    try (DirectoryStream<Path> shards =
        Files.newDirectoryStream(dir, out.getFileName().toString() + "*")) {
      for (Path shard : shards) {
        counts.addAll(Files.readAllLines(shard));
      }
    }
    counts.sort(null);
    counts.forEach(System.out::println);
  }
}
