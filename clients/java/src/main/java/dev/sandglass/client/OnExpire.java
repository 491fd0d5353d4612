package dev.sandglass.client;

/** What happens to a job not started by its deadline ({@code expireAfter}): the API's {@code onExpire}. */
public enum OnExpire {
  /** Dead-letter it with {@code reason: expired} (the default). */
  DEAD("dead"),
  /** Delete it. */
  DROP("drop");

  private final String wire;

  OnExpire(String wire) {
    this.wire = wire;
  }

  /**
   * @return the value the API takes ({@code dead}, {@code drop})
   */
  public String wire() {
    return wire;
  }
}
