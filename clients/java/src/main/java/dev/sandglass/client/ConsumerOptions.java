package dev.sandglass.client;

import java.time.Duration;

/**
 * Settings of a {@link ConsumerLoop}.
 *
 * @param concurrency jobs run at once (one thread, and one long poll, each)
 * @param maxPerClaim jobs each thread claims at once (1-1000), run one after the other: fewer
 *     requests per job, at the price of jobs waiting behind the one running
 * @param leaseMs the lease of each claim, and of each extension, ms (200-86,400,000)
 * @param waitMs the long poll of each claim, ms (0-60,000)
 * @param extendEveryMs how often a running job's lease is extended, ms (below leaseMs)
 * @param retryDelay the delay before a failed job's next attempt; null: the job's backoff
 */
public record ConsumerOptions(int concurrency, int maxPerClaim, long leaseMs, long waitMs, long extendEveryMs, Duration retryDelay) {
  /**
   * Checks the bounds here, where a mistake is found at start rather than at the first claim.
   *
   * @param concurrency jobs run at once
   * @param maxPerClaim jobs each thread claims at once
   * @param leaseMs the lease of each claim and extension, ms
   * @param waitMs the long poll of each claim, ms
   * @param extendEveryMs how often a running job's lease is extended, ms
   * @param retryDelay the delay before a failed job's next attempt; null: the job's backoff
   */
  public ConsumerOptions {
    if (concurrency < 1) throw new IllegalArgumentException("concurrency must be at least 1, got " + concurrency);
    if (maxPerClaim < 1 || maxPerClaim > 1000) throw new IllegalArgumentException("maxPerClaim must be 1-1000, got " + maxPerClaim);
    if (leaseMs < 200 || leaseMs > 86_400_000) throw new IllegalArgumentException("leaseMs must be 200-86400000, got " + leaseMs);
    if (waitMs < 0 || waitMs > 60_000) throw new IllegalArgumentException("waitMs must be 0-60000, got " + waitMs);
    if (extendEveryMs < 1 || extendEveryMs >= leaseMs)
      throw new IllegalArgumentException("extendEveryMs must be 1 to below leaseMs (" + leaseMs + "), got " + extendEveryMs);
  }

  /**
   * @return one job at a time, one per claim, 30 s leases extended every 10 s, 20 s long polls, the job's backoff
   */
  public static ConsumerOptions defaults() {
    return new ConsumerOptions(1, 1, 30_000, 20_000, 10_000, null);
  }

  /**
   * @param concurrency jobs run at once
   * @return a copy with it set
   */
  public ConsumerOptions withConcurrency(int concurrency) {
    return new ConsumerOptions(concurrency, maxPerClaim, leaseMs, waitMs, extendEveryMs, retryDelay);
  }

  /**
   * @param maxPerClaim jobs each thread claims at once (1-1000), run one after the other
   * @return a copy with it set
   */
  public ConsumerOptions withMaxPerClaim(int maxPerClaim) {
    return new ConsumerOptions(concurrency, maxPerClaim, leaseMs, waitMs, extendEveryMs, retryDelay);
  }

  /**
   * @param lease the lease of each claim and extension; extended every third of it
   * @return a copy with {@code leaseMs} and {@code extendEveryMs} set
   */
  public ConsumerOptions withLease(Duration lease) {
    return new ConsumerOptions(concurrency, maxPerClaim, lease.toMillis(), waitMs, Math.max(1, lease.toMillis() / 3), retryDelay);
  }

  /**
   * @param wait the long poll of each claim
   * @return a copy with {@code waitMs} set
   */
  public ConsumerOptions withWait(Duration wait) {
    return new ConsumerOptions(concurrency, maxPerClaim, leaseMs, wait.toMillis(), extendEveryMs, retryDelay);
  }

  /**
   * @param retryDelay the delay before a failed job's next attempt; null: the job's backoff
   * @return a copy with it set
   */
  public ConsumerOptions withRetryDelay(Duration retryDelay) {
    return new ConsumerOptions(concurrency, maxPerClaim, leaseMs, waitMs, extendEveryMs, retryDelay);
  }
}
