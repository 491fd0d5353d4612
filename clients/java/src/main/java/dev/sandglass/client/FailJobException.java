package dev.sandglass.client;

import java.time.Duration;

/**
 * Thrown by a {@link JobHandler} to fail its job in a given way: retried after a delay of its own,
 * or dead-lettered at once. Any other exception fails the job with the loop's retry delay.
 */
public final class FailJobException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The delay before the next attempt; null: the loop's. */
  private final Duration retryDelay;
  /** Dead-letter now. */
  private final boolean dead;

  private FailJobException(String message, Duration retryDelay, boolean dead, Throwable cause) {
    super(message, cause);
    this.retryDelay = retryDelay;
    this.dead = dead;
  }

  /**
   * @param message why it failed (kept as the job's lastError)
   * @param retryDelay when to try again
   * @return the exception to throw
   */
  public static FailJobException retryAfter(String message, Duration retryDelay) {
    return new FailJobException(message, retryDelay, false, null);
  }

  /**
   * @param message why it failed (kept as the job's lastError)
   * @return the exception to throw: the job is dead-lettered, skipping its remaining attempts
   */
  public static FailJobException dead(String message) {
    return new FailJobException(message, null, true, null);
  }

  /**
   * @return the delay before the next attempt, or null for the loop's
   */
  public Duration retryDelay() {
    return retryDelay;
  }

  /**
   * @return true when the job is to be dead-lettered now
   */
  public boolean dead() {
    return dead;
  }
}
