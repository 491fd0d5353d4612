package dev.sandglass.client;

/**
 * The answer of an extend.
 *
 * @param result {@code extended}
 * @param leaseUntilAt the lease's new end, epoch ms (Redis server clock)
 */
public record ExtendResult(String result, long leaseUntilAt) {
  static ExtendResult from(Object answer) {
    Fields f = Fields.of(answer, "extend answer");
    return new ExtendResult(f.string("result"), f.number("leaseUntilAt"));
  }
}
