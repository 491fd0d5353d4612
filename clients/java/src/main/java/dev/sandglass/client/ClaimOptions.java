package dev.sandglass.client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The body of a claim. Null fields are not sent (the service's default applies).
 *
 * @param max jobs to claim at most, 1-1000 (default 1)
 * @param leaseMs how long the claim holds the jobs, 200-86,400,000 (default 30,000)
 * @param waitMs long poll: how long to wait for a job to fall due, 0-60,000 (default 0)
 */
public record ClaimOptions(Integer max, Long leaseMs, Long waitMs) {
  /**
   * @return the service's defaults: one job, 30 s lease, no wait
   */
  public static ClaimOptions defaults() {
    return new ClaimOptions(null, null, null);
  }

  Map<String, Object> toJson() {
    Map<String, Object> json = new LinkedHashMap<>();
    if (max != null) json.put("max", max);
    if (leaseMs != null) json.put("leaseMs", leaseMs);
    if (waitMs != null) json.put("waitMs", waitMs);
    return json;
  }
}
