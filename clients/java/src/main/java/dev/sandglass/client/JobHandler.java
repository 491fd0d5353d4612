package dev.sandglass.client;

/**
 * What a {@link ConsumerLoop} does with each job. Returning acks the job (with the returned value
 * as its {@code result} when not null); throwing fails it: retried after the loop's retry delay or
 * the job's backoff, or as a {@link FailJobException} says.
 */
@FunctionalInterface
public interface JobHandler {
  /**
   * Runs one job. The lease is extended while this runs; a job may be delivered again (its lease
   * lost, a crash before the ack), so make the work idempotent by {@link PulledJob#id()}.
   *
   * @param job the job, under lease
   * @return the job's result (any JSON value), or null for none
   * @throws Exception to fail the job
   */
  Object handle(PulledJob job) throws Exception;
}
