package dev.sandglass.client;

/**
 * A job handed out by a claim, under a lease. Ack, fail or extend it with its {@link #token()}.
 * Instants are epoch ms on the Redis server's clock.
 *
 * @param id the job id
 * @param queue the queue's name
 * @param payload the payload as a JSON tree (see {@link Json})
 * @param dueAt when it fell due
 * @param attempt which delivery this is, 1-based
 * @param maxAttempts deliveries before it is dead-lettered
 * @param token the claim's fencing token
 * @param leaseUntilAt when the lease ends unless extended
 * @param schedule set for a tick of a recurring schedule
 * @param heldByLimit true when the queue's rate or concurrency limit held it back
 * @param traceparent the W3C traceparent stored with the job
 * @param group the job's group; null: the default group
 */
public record PulledJob(
    String id,
    String queue,
    Object payload,
    long dueAt,
    int attempt,
    int maxAttempts,
    String token,
    long leaseUntilAt,
    ScheduleRef schedule,
    boolean heldByLimit,
    String traceparent,
    String group) {

  static PulledJob from(Object answer) {
    Fields f = Fields.of(answer, "PulledJob");
    return new PulledJob(
        f.string("id"),
        f.string("queue"),
        f.value("payload"),
        f.number("dueAt"),
        Math.toIntExact(f.number("attempt")),
        Math.toIntExact(f.number("maxAttempts")),
        f.string("token"),
        f.number("leaseUntilAt"),
        f.schedule(),
        Boolean.TRUE.equals(f.value("heldByLimit")),
        f.optionalString("traceparent"),
        f.optionalString("group"));
  }

  /** Without the fencing token: a log line must not hand out the right to settle the job. */
  @Override
  public String toString() {
    return "PulledJob[id=" + id + ", queue=" + queue + ", dueAt=" + dueAt + ", attempt=" + attempt + "/" + maxAttempts
        + ", leaseUntilAt=" + leaseUntilAt + (group == null ? "" : ", group=" + group) + "]";
  }
}
