import dev.sandglass.client.AddOptions;
import dev.sandglass.client.BulkJob;
import dev.sandglass.client.ConsumerLoop;
import dev.sandglass.client.ConsumerOptions;
import dev.sandglass.client.Json;
import dev.sandglass.client.SandglassClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Throughput of the Java client against a running service: N/2 jobs added by addBulk (500 per
 * request), N/2 by single adds from C threads, then all N claimed and acked by a consumer loop of
 * C threads, after a warm-up of 3 s of adds on another queue. Prints one JSON line with jobs/s per
 * phase. On a small machine, {@code -XX:+UseSerialGC} leaves more CPU to the service (G1's threads
 * cost more than they save in a short run).
 *
 * <pre>
 * SANDGLASS_URL=... SANDGLASS_TOKEN=... java -cp classes Bench [jobs=10000] [concurrency=16] [maxPerClaim=1]
 * </pre>
 */
public final class Bench {
  private Bench() {}

  /**
   * @param args the job count and the concurrency
   */
  public static void main(String[] args) throws Exception {
    int jobs = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
    int concurrency = args.length > 1 ? Integer.parseInt(args[1]) : 16;
    int maxPerClaim = args.length > 2 ? Integer.parseInt(args[2]) : 1;
    SandglassClient client = SandglassClient.builder(System.getenv("SANDGLASS_URL")).token(System.getenv("SANDGLASS_TOKEN")).build();
    String queue = "bench-java-" + UUID.randomUUID().toString().substring(0, 8);
    Map<String, Object> payload = Map.of("orderId", 42, "note", "close the order if unpaid");
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("jobs", jobs);
    result.put("concurrency", concurrency);
    result.put("maxPerClaim", maxPerClaim);

    // Warm-up, not counted: 3 s of the same load on another queue, so the JIT has compiled the
    // request path and the connections are open, as in a service that has been running a while.
    String warmQueue = queue + "-warmup";
    long warmUntil = System.nanoTime() + 3_000_000_000L;
    ExecutorService warmers = Executors.newFixedThreadPool(concurrency);
    for (int t = 0; t < concurrency; t++) {
      warmers.execute(() -> {
        while (System.nanoTime() < warmUntil) client.add(warmQueue, payload);
      });
    }
    warmers.shutdown();
    warmers.awaitTermination(1, TimeUnit.MINUTES);
    for (int i = 0; i < 5; i++) client.addBulk(warmQueue, List.of(BulkJob.of(payload), BulkJob.of(payload)));

    int bulkJobs = jobs / 2;
    long started = System.nanoTime();
    for (int done = 0; done < bulkJobs; ) {
      int size = Math.min(500, bulkJobs - done);
      List<BulkJob> batch = new ArrayList<>(size);
      for (int i = 0; i < size; i++) batch.add(BulkJob.of(payload));
      client.addBulk(queue, batch);
      done += size;
    }
    result.put("addBulkJobsPerSecond", rate(bulkJobs, started));

    int singleJobs = jobs - bulkJobs;
    AtomicInteger next = new AtomicInteger();
    ExecutorService producers = Executors.newFixedThreadPool(concurrency);
    started = System.nanoTime();
    for (int t = 0; t < concurrency; t++) {
      producers.execute(() -> {
        while (next.getAndIncrement() < singleJobs) client.add(queue, payload, AddOptions.none());
      });
    }
    producers.shutdown();
    producers.awaitTermination(10, TimeUnit.MINUTES);
    result.put("addJobsPerSecond", rate(singleJobs, started));

    CountDownLatch consumed = new CountDownLatch(jobs);
    started = System.nanoTime();
    ConsumerLoop loop =
        client.consume(queue, job -> {
          consumed.countDown();
          return null;
        }, ConsumerOptions.defaults().withConcurrency(concurrency).withMaxPerClaim(maxPerClaim).withWait(Duration.ofSeconds(1)));
    try {
      consumed.await(10, TimeUnit.MINUTES);
      result.put("claimAckJobsPerSecond", rate(jobs - (int) consumed.getCount(), started));
    } finally {
      loop.stop(Duration.ofSeconds(10));
    }
    System.out.println(Json.write(result));
    System.exit(0);
  }

  private static long rate(int jobs, long startedNanos) {
    return Math.round(jobs / ((System.nanoTime() - startedNanos) / 1e9));
  }
}
