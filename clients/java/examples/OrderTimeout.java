import dev.sandglass.client.AddOptions;
import dev.sandglass.client.ConsumerLoop;
import dev.sandglass.client.ConsumerOptions;
import dev.sandglass.client.Json;
import dev.sandglass.client.SandglassClient;
import dev.sandglass.client.SandglassException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The order-timeout example: 20 orders, each to be closed if still unpaid after its delay; 7 are
 * paid (their jobs cancelled) before they are due; a consumer loop closes the other 13, each once
 * and never before its due time. Prints a one-line JSON summary and exits 1 if any rule was broken.
 *
 * <pre>
 * SANDGLASS_URL=http://127.0.0.1:8080 SANDGLASS_TOKEN=... java -cp classes OrderTimeout
 * </pre>
 */
public final class OrderTimeout {
  private static final int ORDERS = 20;
  private static final long LEASE_MS = 30_000;

  private OrderTimeout() {}

  /** Order N is paid when N % 3 == 1: orders 1, 4, 7, 10, 13, 16, 19. */
  private static boolean paid(int n) {
    return n % 3 == 1;
  }

  /** Close order N in 2 s + N * 100 ms: late enough for the payments to come first. */
  private static long delayMs(int n) {
    return 2_000 + n * 100L;
  }

  /**
   * @param args none; SANDGLASS_URL, SANDGLASS_TOKEN and optionally SANDGLASS_QUEUE come from the environment
   */
  public static void main(String[] args) throws InterruptedException {
    SandglassClient client =
        SandglassClient.builder(System.getenv().getOrDefault("SANDGLASS_URL", "http://127.0.0.1:8080")).token(System.getenv("SANDGLASS_TOKEN")).build();
    // A queue of its own per run: ids are idempotent, so a rerun on one queue would add nothing.
    String queue = System.getenv().getOrDefault("SANDGLASS_QUEUE", "order-timeout-" + UUID.randomUUID().toString().substring(0, 8));

    for (int n = 1; n <= ORDERS; n++) {
      client.add(queue, Map.of("orderId", n, "closeInMs", delayMs(n)), AddOptions.none().id("order:" + n).delayMs(delayMs(n)));
    }

    List<String> cancelled = new ArrayList<>();
    List<String> cancelRefused = new ArrayList<>();
    for (int n = 1; n <= ORDERS; n++) {
      if (!paid(n)) continue;
      try {
        client.cancel(queue, "order:" + n); // the order was paid: it must not be closed
        cancelled.add("order:" + n);
      } catch (SandglassException e) {
        cancelRefused.add("order:" + n + " (" + e.code() + ")");
      }
    }

    int toClose = ORDERS - cancelled.size();
    List<String> closed = new ArrayList<>(); // every close, in order: a duplicate would show twice
    Map<String, AtomicInteger> closes = new ConcurrentHashMap<>();
    AtomicLong earliestMarginMs = new AtomicLong(Long.MAX_VALUE);
    CountDownLatch allClosed = new CountDownLatch(toClose);
    ConsumerOptions options = ConsumerOptions.defaults().withConcurrency(4).withLease(Duration.ofMillis(LEASE_MS)).withWait(Duration.ofSeconds(5));
    ConsumerLoop loop =
        client.consume(
            queue,
            job -> {
              // The claim's instant on the Redis clock (the clock due times are on): never before dueAt.
              earliestMarginMs.accumulateAndGet(job.leaseUntilAt() - LEASE_MS - job.dueAt(), Math::min);
              synchronized (closed) {
                closed.add(job.id());
              }
              closes.computeIfAbsent(job.id(), id -> new AtomicInteger()).incrementAndGet();
              allClosed.countDown();
              return Map.of("closed", true);
            },
            options);
    try {
      allClosed.await(60, TimeUnit.SECONDS);
      // A little longer, so that a second delivery or a cancelled order running would be seen.
      Thread.sleep(1_000);
    } finally {
      // Stops claiming, lets running handlers finish and ack, then returns.
      loop.stop(Duration.ofSeconds(10));
    }

    List<String> closedMoreThanOnce = new ArrayList<>();
    closes.forEach((id, count) -> {
      if (count.get() > 1) closedMoreThanOnce.add(id);
    });
    List<String> cancelledButClosed = new ArrayList<>(cancelled);
    cancelledButClosed.retainAll(closes.keySet());
    boolean ok =
        closes.size() == toClose && closedMoreThanOnce.isEmpty() && cancelledButClosed.isEmpty() && cancelRefused.isEmpty() && earliestMarginMs.get() >= 0;

    Map<String, Object> summary = new LinkedHashMap<>();
    summary.put("queue", queue);
    summary.put("ok", ok);
    synchronized (closed) {
      summary.put("closed", new ArrayList<>(closed));
    }
    summary.put("cancelled", cancelled);
    summary.put("cancelRefused", cancelRefused);
    summary.put("closedMoreThanOnce", new ArrayList<>(new TreeSet<>(closedMoreThanOnce)));
    summary.put("cancelledButClosed", cancelledButClosed);
    summary.put("earliestStartMarginMs", earliestMarginMs.get() == Long.MAX_VALUE ? null : earliestMarginMs.get());
    System.out.println(Json.write(summary));
    System.exit(ok ? 0 : 1);
  }
}
