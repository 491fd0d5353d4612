package dev.sandglass.client;

/** 404 {@code NOT_FOUND}: no job with this id in this queue (never added, completed or cancelled). */
public class NotFoundException extends SandglassException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public NotFoundException(int status, String code, String message) {
    super(status, code, message);
  }
}
