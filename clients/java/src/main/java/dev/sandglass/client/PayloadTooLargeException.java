package dev.sandglass.client;

/** 413 {@code BODY_TOO_LARGE} or {@code PAYLOAD_TOO_LARGE}: the request body or a job payload is over the limit. */
public class PayloadTooLargeException extends SandglassException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public PayloadTooLargeException(int status, String code, String message) {
    super(status, code, message);
  }
}
