package dev.sandglass.client;

/** 409 {@code CONFLICT}: {@code ifExists: replace} of a running job, or a partition count mismatch. The base of the other 409s. */
public class ConflictException extends SandglassException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public ConflictException(int status, String code, String message) {
    super(status, code, message);
  }
}
