package dev.sandglass.client;

/** 403 {@code FORBIDDEN_HOST} or {@code CROSS_ORIGIN}: the request was refused for where it came from. */
public class ForbiddenException extends SandglassException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public ForbiddenException(int status, String code, String message) {
    super(status, code, message);
  }
}
