package dev.sandglass.client;

/**
 * An error answer of the service ({@code { "error": { "code", "message" } }}), or a request that
 * got no answer. Branch on {@link #code()} (stable) or on the subclass; show {@link #getMessage()}.
 *
 * <p>Codes without a subclass of their own (and codes newer than this client) are this class. The
 * bearer token is never part of a message.
 */
public class SandglassException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The code of a request that got no HTTP answer (connection refused, reset, timed out). */
  public static final String CONNECTION_FAILED = "CONNECTION_FAILED";

  /** The HTTP status, 0 without an answer. */
  private final int status;
  /** The API's error code. */
  private final String code;

  /**
   * @param status the HTTP status of the answer (0: no answer)
   * @param code the API's error code, e.g. {@code NOT_FOUND}
   * @param message the API's message, for humans
   */
  public SandglassException(int status, String code, String message) {
    super(code + " (" + status + "): " + message);
    this.status = status;
    this.code = code;
  }

  /**
   * A request that got no answer.
   *
   * @param message what happened
   * @param cause the transport's exception
   */
  public SandglassException(String message, Throwable cause) {
    super(CONNECTION_FAILED + ": " + message, cause);
    this.status = 0;
    this.code = CONNECTION_FAILED;
  }

  /**
   * @return the HTTP status of the answer, 0 when there was none
   */
  public int status() {
    return status;
  }

  /**
   * @return the API's error code ({@code VALIDATION}, {@code NOT_FOUND}, ...), or {@link
   *     #CONNECTION_FAILED}
   */
  public String code() {
    return code;
  }
}
