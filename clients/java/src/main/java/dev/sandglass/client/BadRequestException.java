package dev.sandglass.client;

/** A request the service could not read (400 {@code INVALID_JSON}, {@code JSON_TOO_DEEP}, {@code FORBIDDEN_KEY}, {@code BAD_REQUEST}; 415 {@code UNSUPPORTED_MEDIA_TYPE}; 431 {@code HEADERS_TOO_LARGE}; 408 {@code REQUEST_TIMEOUT}). */
public class BadRequestException extends SandglassException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public BadRequestException(int status, String code, String message) {
    super(status, code, message);
  }
}
