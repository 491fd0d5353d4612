package dev.sandglass.client;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

/**
 * The new due time of a reschedule: exactly one of the API's {@code delay} or {@code at}.
 *
 * @param field {@code delay} or {@code at}
 * @param value ms (a Long) or a text (a duration, or an RFC 3339 date-time)
 */
public record When(String field, Object value) {
  /**
   * @param delay how long from now
   * @return {@code { delay: ms }}
   */
  public static When delay(Duration delay) {
    return new When("delay", delay.toMillis());
  }

  /**
   * @param delay a duration text such as {@code 30m}
   * @return {@code { delay }}
   */
  public static When delay(String delay) {
    return new When("delay", delay);
  }

  /**
   * @param at the instant
   * @return {@code { at: epoch ms }}
   */
  public static When at(Instant at) {
    return new When("at", at.toEpochMilli());
  }

  /**
   * @param at an RFC 3339 date-time with a zone
   * @return {@code { at }}
   */
  public static When at(String at) {
    return new When("at", at);
  }

  Map<String, Object> toJson() {
    return Map.of(field, value);
  }
}
