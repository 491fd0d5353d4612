package dev.sandglass.client;

/** 401 {@code UNAUTHORIZED}: the service has a token and the request had none, or another one. */
public class UnauthorizedException extends SandglassException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public UnauthorizedException(int status, String code, String message) {
    super(status, code, message);
  }
}
