package dev.sandglass.client;

/**
 * The answer of a fail.
 *
 * @param result {@code retried} or {@code dead}
 * @param retryAt when retried: when the next attempt falls due (epoch ms); null when dead, or on a
 *     resent fail whose retry another claim has taken
 */
public record FailResult(String result, Long retryAt) {
  static FailResult from(Object answer) {
    Fields f = Fields.of(answer, "fail answer");
    return new FailResult(f.string("result"), f.optionalNumber("retryAt"));
  }
}
