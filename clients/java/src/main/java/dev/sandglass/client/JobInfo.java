package dev.sandglass.client;

/**
 * A job as {@code GET /v1/queues/{queue}/jobs/{id}} answers it. Optional fields are null when the
 * answer has none. Instants are epoch ms on the Redis server's clock.
 *
 * @param id the job id
 * @param payload the payload as a JSON tree (see {@link Json})
 * @param state {@code delayed}, {@code ready}, {@code active}, {@code dead} or {@code completed}
 * @param dueAt when it falls due
 * @param attempts deliveries so far
 * @param maxAttempts the job's own maximum, if set
 * @param leaseUntilAt while active: when the lease ends
 * @param deadAt while dead: when it was dead-lettered
 * @param lastError the error of the last failed attempt
 * @param schedule set for a tick of a recurring schedule
 * @param reason while dead: {@code failed} or {@code expired}
 * @param expiresAt while waiting: its deadline
 * @param finishedAt while completed: when it completed
 * @param result while completed: the handler's result (JSON tree)
 * @param traceparent the W3C traceparent stored with the job
 * @param group the job's group; null: the default group
 */
public record JobInfo(
    String id,
    Object payload,
    String state,
    long dueAt,
    int attempts,
    Integer maxAttempts,
    Long leaseUntilAt,
    Long deadAt,
    String lastError,
    ScheduleRef schedule,
    String reason,
    Long expiresAt,
    Long finishedAt,
    Object result,
    String traceparent,
    String group) {

  static JobInfo from(Object answer) {
    Fields f = Fields.of(answer, "JobInfo");
    return new JobInfo(
        f.string("id"),
        f.value("payload"),
        f.string("state"),
        f.number("dueAt"),
        Math.toIntExact(f.number("attempts")),
        f.optionalInt("maxAttempts"),
        f.optionalNumber("leaseUntilAt"),
        f.optionalNumber("deadAt"),
        f.optionalString("lastError"),
        f.schedule(),
        f.optionalString("reason"),
        f.optionalNumber("expiresAt"),
        f.optionalNumber("finishedAt"),
        f.value("result"),
        f.optionalString("traceparent"),
        f.optionalString("group"));
  }
}
