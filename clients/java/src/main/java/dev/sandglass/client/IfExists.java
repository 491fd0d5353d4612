package dev.sandglass.client;

/** What adding an id that exists does: the API's {@code ifExists}. */
public enum IfExists {
  /** Change nothing and answer the id (idempotent producers; the default). */
  KEEP("keep"),
  /** Overwrite a waiting or dead job's payload, due time and options (a debounce). */
  REPLACE("replace");

  private final String wire;

  IfExists(String wire) {
    this.wire = wire;
  }

  /**
   * @return the value the API takes ({@code keep}, {@code replace})
   */
  public String wire() {
    return wire;
  }
}
