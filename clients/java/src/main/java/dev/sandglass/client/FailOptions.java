package dev.sandglass.client;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The body of a fail, besides the token. Null fields are not sent.
 *
 * @param error why it failed, kept as the job's {@code lastError} (at most 4096 characters)
 * @param retryDelayMs retry after this long instead of the backoff
 * @param dead true: dead-letter now, skipping the remaining attempts
 */
public record FailOptions(String error, Long retryDelayMs, Boolean dead) {
  /** The service's limit on {@code error}. */
  static final int MAX_ERROR_LENGTH = 4096;

  /**
   * @param error why it failed
   * @return a fail retried after the job's backoff
   */
  public static FailOptions error(String error) {
    return new FailOptions(error, null, null);
  }

  /**
   * @param error why it failed
   * @param retryDelay when to retry
   * @return a fail retried after {@code retryDelay}
   */
  public static FailOptions retryAfter(String error, Duration retryDelay) {
    return new FailOptions(error, retryDelay.toMillis(), null);
  }

  /**
   * @param error why it failed
   * @return a fail that dead-letters the job now
   */
  public static FailOptions dead(String error) {
    return new FailOptions(error, null, true);
  }

  Map<String, Object> toJson(String token) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("token", token);
    // The service refuses a longer error; the start of a stack trace is what explains it anyway.
    if (error != null) json.put("error", error.length() > MAX_ERROR_LENGTH ? error.substring(0, MAX_ERROR_LENGTH) : error);
    if (retryDelayMs != null) json.put("retryDelayMs", retryDelayMs);
    if (dead != null) json.put("dead", dead);
    return json;
  }
}
