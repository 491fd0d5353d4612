package dev.sandglass.client;

import java.util.Map;

/** The one place where an error answer becomes an exception: by its {@code code}, never its text. */
final class ErrorMapping {
  /** What the service answers, as far as a status and a message go, when its body is not the API's. */
  private static final int MAX_FOREIGN_BODY = 200;

  private ErrorMapping() {}

  /**
   * @param status the HTTP status
   * @param body the answer's body (the API's error JSON, or whatever a proxy sent)
   */
  static SandglassException toException(int status, String body) {
    String code = null;
    String message = null;
    try {
      if (Json.parse(body) instanceof Map<?, ?> root && root.get("error") instanceof Map<?, ?> error) {
        code = error.get("code") instanceof String text ? text : null;
        message = error.get("message") instanceof String text ? text : null;
      }
    } catch (JsonException notTheApi) {
      // A proxy's or load balancer's page: keep its status, show the start of its text.
    }
    if (code == null) {
      String shown = body == null ? "" : body.length() > MAX_FOREIGN_BODY ? body.substring(0, MAX_FOREIGN_BODY) + "..." : body;
      return new SandglassException(status, "HTTP_" + status, "not an API error answer: " + shown);
    }
    return forCode(status, code, message == null ? "" : message);
  }

  static SandglassException forCode(int status, String code, String message) {
    return switch (code) {
      case "VALIDATION" -> new ValidationException(status, code, message);
      case "INVALID_JSON", "JSON_TOO_DEEP", "FORBIDDEN_KEY", "BAD_REQUEST", "UNSUPPORTED_MEDIA_TYPE", "HEADERS_TOO_LARGE", "REQUEST_TIMEOUT" ->
          new BadRequestException(status, code, message);
      case "UNAUTHORIZED" -> new UnauthorizedException(status, code, message);
      case "FORBIDDEN_SCOPE" -> new ForbiddenScopeException(status, code, message);
      case "FORBIDDEN_HOST", "CROSS_ORIGIN" -> new ForbiddenException(status, code, message);
      case "NOT_FOUND" -> new NotFoundException(status, code, message);
      case "CONFLICT" -> new ConflictException(status, code, message);
      case "JOB_RUNNING" -> new JobRunningException(status, code, message);
      case "STALE_TOKEN" -> new StaleTokenException(status, code, message);
      case "BODY_TOO_LARGE", "PAYLOAD_TOO_LARGE" -> new PayloadTooLargeException(status, code, message);
      case "REDIS_UNAVAILABLE", "SHUTTING_DOWN", "NOT_READY", "INCOMPATIBLE_STORAGE", "REDIS_FULL" ->
          new ServiceUnavailableException(status, code, message);
      // INTERNAL, ROUTE_NOT_FOUND, DASHBOARD_NOT_FOUND and codes newer than this client.
      default -> new SandglassException(status, code, message);
    };
  }
}
