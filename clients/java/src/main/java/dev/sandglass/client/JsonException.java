package dev.sandglass.client;

/**
 * Malformed JSON text, or a value that has no JSON form (a NaN, a map with a non-string key, a
 * type the writer does not know). The message names the position in the text where parsing stopped.
 */
public final class JsonException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what is wrong, and where
   */
  public JsonException(String message) {
    super(message);
  }
}
