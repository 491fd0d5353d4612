package dev.sandglass.client;

/**
 * A JSON text sent as it is, without being parsed into a tree and written again: for a payload
 * that the application already has as JSON (from Jackson, a file, a message). Made by
 * {@link Json#raw(String)}, which checks that the text is one well-formed JSON value.
 *
 * @param text the JSON text, well-formed
 */
public record RawJson(String text) {
  /**
   * Checks the text at once, so a malformed payload fails where it is made, not at the service.
   *
   * @param text the JSON text
   * @throws JsonException when it is not one well-formed JSON value
   */
  public RawJson {
    Json.parse(text);
  }

  @Override
  public String toString() {
    return text;
  }
}
