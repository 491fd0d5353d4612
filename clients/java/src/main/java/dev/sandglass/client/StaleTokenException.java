package dev.sandglass.client;

/** 409 {@code STALE_TOKEN}: ack, fail or extend with a fencing token that no longer holds the lease; nothing changed. */
public class StaleTokenException extends ConflictException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public StaleTokenException(int status, String code, String message) {
    super(status, code, message);
  }
}
