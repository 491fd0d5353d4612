package dev.sandglass.client;

/** 403 {@code FORBIDDEN_SCOPE}: the token is valid but its scopes do not allow this route. */
public class ForbiddenScopeException extends ForbiddenException {
  private static final long serialVersionUID = 1L;

  /**
   * @param status the HTTP status of the answer
   * @param code the API's error code
   * @param message the API's message, for humans
   */
  public ForbiddenScopeException(int status, String code, String message) {
    super(status, code, message);
  }
}
