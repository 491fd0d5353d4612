package dev.sandglass.client;

/** The service cannot serve now: 503 {@code REDIS_UNAVAILABLE}, {@code SHUTTING_DOWN}, {@code NOT_READY}, {@code INCOMPATIBLE_STORAGE}, 507 {@code REDIS_FULL}; retry with backoff (or on another instance). */
public class ServiceUnavailableException extends SandglassException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public ServiceUnavailableException(int status, String code, String message) {
    super(status, code, message);
  }
}
