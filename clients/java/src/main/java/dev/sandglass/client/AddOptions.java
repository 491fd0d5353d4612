package dev.sandglass.client;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The options of an add, named as the API's body fields ({@code delay}, {@code at}, {@code id},
 * {@code ifExists}, {@code maxAttempts}, {@code backoff}, {@code expireAfter}, {@code onExpire},
 * {@code group}). Immutable: each method answers a copy with one field set. A field left unset is
 * not sent, so the service's default applies. Neither {@code delay} nor {@code at}: due now.
 *
 * <pre>{@code
 * AddOptions.none().id("order:42").delay(Duration.ofMinutes(30))
 * }</pre>
 */
public final class AddOptions {
  private static final AddOptions NONE = new AddOptions(new LinkedHashMap<>());

  private final Map<String, Object> fields;

  private AddOptions(Map<String, Object> fields) {
    this.fields = fields;
  }

  /**
   * @return options with nothing set
   */
  public static AddOptions none() {
    return NONE;
  }

  private AddOptions with(String name, Object value) {
    Map<String, Object> copy = new LinkedHashMap<>(fields);
    copy.put(name, Objects.requireNonNull(value, name));
    return new AddOptions(copy);
  }

  /**
   * @param delay how long from now (the Redis server's clock) the job falls due
   * @return a copy with {@code delay} set, in ms
   */
  public AddOptions delay(Duration delay) {
    return with("delay", delay.toMillis());
  }

  /**
   * @param delay a duration text such as {@code 30m}, {@code 1h30m} (units ms s m h d w)
   * @return a copy with {@code delay} set
   */
  public AddOptions delay(String delay) {
    return with("delay", delay);
  }

  /**
   * @param delayMs how long from now the job falls due, ms
   * @return a copy with {@code delay} set
   */
  public AddOptions delayMs(long delayMs) {
    return with("delay", delayMs);
  }

  /**
   * @param at when the job falls due
   * @return a copy with {@code at} set, in epoch ms
   */
  public AddOptions at(Instant at) {
    return with("at", at.toEpochMilli());
  }

  /**
   * @param at an RFC 3339 date-time with a zone, e.g. {@code 2030-01-01T00:00:00Z}
   * @return a copy with {@code at} set
   */
  public AddOptions at(String at) {
    return with("at", at);
  }

  /**
   * @param id the job id, 1-200 characters without control characters (the add is idempotent by it)
   * @return a copy with {@code id} set
   */
  public AddOptions id(String id) {
    return with("id", id);
  }

  /**
   * @param ifExists what adding an id that exists does (not allowed per job of a bulk add: pass it to
   *     {@code addBulk})
   * @return a copy with {@code ifExists} set
   */
  public AddOptions ifExists(IfExists ifExists) {
    return with("ifExists", ifExists.wire());
  }

  /**
   * @param maxAttempts deliveries before the job is dead-lettered, 1-1,000,000
   * @return a copy with {@code maxAttempts} set
   */
  public AddOptions maxAttempts(int maxAttempts) {
    return with("maxAttempts", maxAttempts);
  }

  /**
   * @param backoff the wait between this job's attempts
   * @return a copy with {@code backoff} set
   */
  public AddOptions backoff(Backoff backoff) {
    return with("backoff", backoff.toJson());
  }

  /**
   * @param expireAfter the deadline after the due time by which the job must start
   * @return a copy with {@code expireAfter} set, in ms
   */
  public AddOptions expireAfter(Duration expireAfter) {
    return with("expireAfter", expireAfter.toMillis());
  }

  /**
   * @param expireAfter the deadline as a duration text such as {@code 1h}
   * @return a copy with {@code expireAfter} set
   */
  public AddOptions expireAfter(String expireAfter) {
    return with("expireAfter", expireAfter);
  }

  /**
   * @param onExpire what happens to a job not started by its deadline
   * @return a copy with {@code onExpire} set
   */
  public AddOptions onExpire(OnExpire onExpire) {
    return with("onExpire", onExpire.wire());
  }

  /**
   * @param group the job's group, 1-100 characters without control characters
   * @return a copy with {@code group} set
   */
  public AddOptions group(String group) {
    return with("group", group);
  }

  boolean has(String name) {
    return fields.containsKey(name);
  }

  /** The body of an add: {@code payload} first, then the fields set. */
  Map<String, Object> body(Object payload) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("payload", payload);
    body.putAll(fields);
    return body;
  }

  @Override
  public String toString() {
    return "AddOptions" + Json.write(fields);
  }
}
