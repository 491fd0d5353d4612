package dev.sandglass.client;

/**
 * Set on a job that is a tick of a recurring schedule.
 *
 * @param key the schedule's key
 * @param tickAt the tick time the job runs for, epoch ms
 */
public record ScheduleRef(String key, long tickAt) {}
