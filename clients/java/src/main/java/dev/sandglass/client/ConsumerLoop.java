package dev.sandglass.client;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A running pull consumer: {@code concurrency} threads, each claiming a job (or up to {@code
 * maxPerClaim}) with a long poll, running the {@link JobHandler}, then acking (on return) or failing
 * (on an exception) the job.
 * While a handler runs, its lease is extended on a scheduled executor, so a job longer than the
 * lease is not handed to another consumer.
 *
 * <p>{@link #stop(Duration)} (and {@link #close()}) stops claiming at once (pending long polls are
 * aborted; the service hands back a job claimed in that instant), lets the running handlers finish
 * and settle their jobs, then returns.
 */
public final class ConsumerLoop implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ConsumerLoop.class.getName());
  /** How long {@link #close()} waits for running handlers. */
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);
  /** Waits after a failed claim (the service restarting, Redis down), doubled up to the max. */
  private static final long FIRST_BACKOFF_MS = 100;
  private static final long MAX_BACKOFF_MS = 5_000;

  private final SandglassClient client;
  private final String queue;
  private final JobHandler handler;
  private final ConsumerOptions options;
  private final ExecutorService workers;
  private final ScheduledExecutorService extender;
  private final Set<CompletableFuture<Object>> polls = ConcurrentHashMap.newKeySet();
  private final CountDownLatch stopSignal = new CountDownLatch(1);
  private final AtomicInteger running = new AtomicInteger();
  /** Set when a stop's timeout passed and the running handlers are being interrupted. */
  private volatile boolean forced;

  private ConsumerLoop(SandglassClient client, String queue, JobHandler handler, ConsumerOptions options) {
    this.client = client;
    this.queue = queue;
    this.handler = handler;
    this.options = options;
    AtomicInteger counter = new AtomicInteger();
    // Not daemon threads: a consumer keeps the JVM alive until it is stopped, as a server would.
    this.workers =
        Executors.newFixedThreadPool(options.concurrency(), task -> new Thread(task, "sandglass-consumer-" + queue + "-" + counter.incrementAndGet()));
    this.extender =
        Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread thread = new Thread(task, "sandglass-lease-" + queue);
              thread.setDaemon(true);
              return thread;
            });
  }

  static ConsumerLoop start(SandglassClient client, String queue, JobHandler handler, ConsumerOptions options) {
    ConsumerLoop loop = new ConsumerLoop(client, queue, handler, options);
    for (int i = 0; i < options.concurrency(); i++) loop.workers.execute(loop::run);
    return loop;
  }

  private boolean stopping() {
    return stopSignal.getCount() == 0;
  }

  private void run() {
    long backoffMs = FIRST_BACKOFF_MS;
    ClaimOptions claim = new ClaimOptions(options.maxPerClaim(), options.leaseMs(), options.waitMs());
    while (!stopping()) {
      List<PulledJob> jobs;
      CompletableFuture<Object> poll = client.claimRequest(queue, claim);
      polls.add(poll);
      try {
        // A stop between the check above and the add: this poll was not in the set it cancelled.
        if (stopping()) poll.cancel(true);
        jobs = SandglassClient.claimed(Transport.join(poll));
        backoffMs = FIRST_BACKOFF_MS;
      } catch (RuntimeException e) {
        if (stopping()) return;
        LOG.log(Level.WARNING, "claim on " + queue + " failed, retrying in " + backoffMs + " ms: " + e.getMessage());
        pause(backoffMs);
        backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
        continue;
      } finally {
        polls.remove(poll);
      }
      // Every job claimed holds a lease from now: those waiting their turn are extended too.
      List<Lease> leases = new ArrayList<>(jobs.size());
      for (PulledJob job : jobs) leases.add(keep(job));
      for (int i = 0; i < jobs.size(); i++) {
        // The first job is run even when a stop came meanwhile; the others, not started, go back at once.
        if (i > 0 && stopping()) handBack(jobs.get(i), leases.get(i));
        else process(jobs.get(i), leases.get(i));
      }
    }
  }

  /** A claimed job's lease extension; {@code handled} is set once the job is settled or being settled. */
  private record Lease(ScheduledFuture<?> extension, AtomicBoolean handled) {
    void end() {
      handled.set(true);
      extension.cancel(false);
    }
  }

  private Lease keep(PulledJob job) {
    // Set once the handler is done: an extension racing with the ack must not log a stale token.
    AtomicBoolean handled = new AtomicBoolean();
    ScheduledFuture<?> extension =
        extender.scheduleAtFixedRate(() -> extend(job, handled), options.extendEveryMs(), options.extendEveryMs(), TimeUnit.MILLISECONDS);
    return new Lease(extension, handled);
  }

  private void handBack(PulledJob job, Lease lease) {
    lease.end();
    settle(job, () -> client.fail(queue, job.id(), job.token(), new FailOptions("the consumer stopped before the job started", 0L, null)));
  }

  private void process(PulledJob job, Lease lease) {
    running.incrementAndGet();
    Object result;
    try {
      result = handler.handle(job);
    } catch (Throwable failure) {
      lease.end();
      fail(job, failure);
      return;
    } finally {
      lease.end();
      running.decrementAndGet();
    }
    if (result != null) {
      try {
        Json.write(result);
      } catch (JsonException e) {
        // Refused before sending, not at every redelivery after the lease: the job fails with why.
        fail(job, new IllegalStateException("the handler's result has no JSON form: " + e.getMessage()));
        return;
      }
    }
    // Interrupted by a stop past its timeout, the handler still finished: its ack must go out.
    boolean interrupted = Thread.interrupted();
    settle(job, () -> result == null ? client.ack(queue, job.id(), job.token()) : client.ack(queue, job.id(), job.token(), result));
    if (interrupted) Thread.currentThread().interrupt();
  }

  private void fail(PulledJob job, Throwable failure) {
    FailOptions fail;
    // The interrupt may have been consumed by the handler (an InterruptedException clears it).
    if (Thread.interrupted() || forced) {
      // Stopped after the timeout: hand the job back at once rather than after its lease.
      fail = new FailOptions("the consumer stopped before the handler finished: " + failure, 0L, null);
    } else if (failure instanceof FailJobException planned) {
      fail = new FailOptions(planned.getMessage(), planned.retryDelay() == null ? null : planned.retryDelay().toMillis(), planned.dead() ? true : null);
    } else {
      Duration delay = options.retryDelay();
      fail = new FailOptions(String.valueOf(failure), delay == null ? null : delay.toMillis(), null);
    }
    FailOptions sent = fail;
    settle(job, () -> client.fail(queue, job.id(), job.token(), sent));
  }

  /** Sends an ack or fail; a refusal is logged (the job comes back after its lease, if anywhere). */
  private void settle(PulledJob job, Supplier<?> send) {
    try {
      send.get();
    } catch (StaleTokenException e) {
      LOG.log(Level.WARNING, "job " + job.id() + " of " + queue + " was settled or claimed again meanwhile (its lease ran out): " + e.getMessage());
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "could not settle job " + job.id() + " of " + queue + "; it is delivered again after its lease: " + e.getMessage());
    }
  }

  private void extend(PulledJob job, AtomicBoolean handled) {
    if (handled.get()) return;
    try {
      client.extend(queue, job.id(), job.token(), options.leaseMs());
    } catch (RuntimeException e) {
      if (handled.get()) return;
      // A stale token means another consumer may run it now; the handler cannot be recalled, but the
      // log says why its ack will be refused. Other failures are retried at the next tick.
      LOG.log(Level.WARNING, "extending the lease of job " + job.id() + " of " + queue + " failed: " + e.getMessage());
    }
  }

  private void pause(long ms) {
    try {
      stopSignal.await(ms, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * @return how many handlers are running now
   */
  public int running() {
    return running.get();
  }

  /**
   * @return false once a stop has begun
   */
  public boolean isRunning() {
    return !stopping();
  }

  /**
   * Stops claiming, waits up to {@code timeout} for the running handlers to finish (their jobs are
   * acked or failed as usual), then returns; jobs claimed but not started yet are handed back at
   * once (with {@code maxPerClaim} above 1). Handlers still running after it are interrupted, and
   * their jobs handed back for another attempt.
   *
   * @param timeout the longest wait for running handlers
   * @return true when every handler finished within it
   */
  public boolean stop(Duration timeout) {
    stopSignal.countDown();
    for (CompletableFuture<Object> poll : polls) poll.cancel(true);
    workers.shutdown();
    boolean finished;
    try {
      finished = workers.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (!finished) {
        forced = true;
        workers.shutdownNow();
        // The interrupted handlers fail their jobs back: give them a moment to send it.
        workers.awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      workers.shutdownNow();
      Thread.currentThread().interrupt();
      finished = false;
    } finally {
      extender.shutdownNow();
    }
    return finished;
  }

  /** {@link #stop(Duration)} with up to 30 s for the running handlers. */
  @Override
  public void close() {
    stop(CLOSE_TIMEOUT);
  }

  @Override
  public String toString() {
    return "ConsumerLoop[queue=" + queue + ", concurrency=" + options.concurrency() + ", running=" + running.get() + ", stopping=" + stopping() + "]";
  }
}
