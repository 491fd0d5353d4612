package dev.sandglass.client;

/** 400 {@code VALIDATION}: a parameter or body field is missing, of the wrong type or out of range (the message names it); nothing was written. */
public class ValidationException extends SandglassException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public ValidationException(int status, String code, String message) {
    super(status, code, message);
  }
}
