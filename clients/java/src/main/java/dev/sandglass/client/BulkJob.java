package dev.sandglass.client;

import java.util.Map;
import java.util.Objects;

/**
 * One job of a bulk add: its payload and options ({@code ifExists} goes to the whole request).
 *
 * @param payload the payload: a Map/List/String/Number/Boolean/null tree, a record, or {@link Json#raw}
 * @param options the job's options
 */
public record BulkJob(Object payload, AddOptions options) {
  /**
   * Refuses an {@code ifExists} per job: the API takes it for the whole bulk add.
   *
   * @param payload the payload
   * @param options the job's options, without {@code ifExists}
   */
  public BulkJob {
    Objects.requireNonNull(options, "options");
    if (options.has("ifExists")) throw new IllegalArgumentException("ifExists applies to the whole bulk add: pass it to addBulk");
  }

  /**
   * @param payload the payload
   * @param options the job's options
   * @return the job
   */
  public static BulkJob of(Object payload, AddOptions options) {
    return new BulkJob(payload, options);
  }

  /**
   * @param payload the payload
   * @return the job, with no options (due now, a generated id)
   */
  public static BulkJob of(Object payload) {
    return new BulkJob(payload, AddOptions.none());
  }

  Map<String, Object> toJson() {
    return options.body(payload);
  }
}
