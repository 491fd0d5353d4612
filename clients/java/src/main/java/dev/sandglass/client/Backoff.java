package dev.sandglass.client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The wait between attempts of one job, overriding the consumer's default: the API's {@code backoff}.
 *
 * @param type {@code fixed} or {@code exponential}
 * @param delayMs the (first) wait, ms
 * @param maxDelayMs exponential only: the longest wait, ms; null: none
 * @param jitter exponential only: 0-1, the share of each wait that is random; null: none
 */
public record Backoff(String type, long delayMs, Long maxDelayMs, Double jitter) {
  /**
   * @param delayMs the wait before every retry, ms
   * @return a fixed backoff
   */
  public static Backoff fixed(long delayMs) {
    return new Backoff("fixed", delayMs, null, null);
  }

  /**
   * @param delayMs the first wait, ms, doubled for each further attempt
   * @param maxDelayMs the longest wait, ms (null: none)
   * @param jitter 0-1, the random share of each wait (null: none)
   * @return an exponential backoff
   */
  public static Backoff exponential(long delayMs, Long maxDelayMs, Double jitter) {
    return new Backoff("exponential", delayMs, maxDelayMs, jitter);
  }

  Map<String, Object> toJson() {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("type", type);
    json.put("delayMs", delayMs);
    if (maxDelayMs != null) json.put("maxDelayMs", maxDelayMs);
    if (jitter != null) json.put("jitter", jitter);
    return json;
  }
}
