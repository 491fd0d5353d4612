package dev.sandglass.client;

/** 409 {@code JOB_RUNNING}: cancel or reschedule of a job a consumer holds; it was not changed. */
public class JobRunningException extends ConflictException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public JobRunningException(int status, String code, String message) {
    super(status, code, message);
  }
}
