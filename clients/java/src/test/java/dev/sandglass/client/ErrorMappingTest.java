package dev.sandglass.client;

import static dev.sandglass.client.Assert.assertEquals;
import static dev.sandglass.client.Assert.assertTrue;

import java.util.Map;

/** Error answers become the exception of their code (src/server/errors.ts lists the codes). */
public final class ErrorMappingTest {
  private static SandglassException answer(int status, String code) {
    return ErrorMapping.toException(status, "{\"error\":{\"code\":\"" + code + "\",\"message\":\"the text\"}}");
  }

  @Test
  public void mapsEveryCodeToItsException() {
    Map<String, Class<?>> expected =
        Map.ofEntries(
            Map.entry("VALIDATION", ValidationException.class),
            Map.entry("INVALID_JSON", BadRequestException.class),
            Map.entry("JSON_TOO_DEEP", BadRequestException.class),
            Map.entry("FORBIDDEN_KEY", BadRequestException.class),
            Map.entry("BAD_REQUEST", BadRequestException.class),
            Map.entry("UNAUTHORIZED", UnauthorizedException.class),
            Map.entry("FORBIDDEN_HOST", ForbiddenException.class),
            Map.entry("CROSS_ORIGIN", ForbiddenException.class),
            Map.entry("FORBIDDEN_SCOPE", ForbiddenScopeException.class),
            Map.entry("REQUEST_TIMEOUT", BadRequestException.class),
            Map.entry("NOT_FOUND", NotFoundException.class),
            Map.entry("ROUTE_NOT_FOUND", SandglassException.class),
            Map.entry("DASHBOARD_NOT_FOUND", SandglassException.class),
            Map.entry("JOB_RUNNING", JobRunningException.class),
            Map.entry("CONFLICT", ConflictException.class),
            Map.entry("STALE_TOKEN", StaleTokenException.class),
            Map.entry("BODY_TOO_LARGE", PayloadTooLargeException.class),
            Map.entry("PAYLOAD_TOO_LARGE", PayloadTooLargeException.class),
            Map.entry("UNSUPPORTED_MEDIA_TYPE", BadRequestException.class),
            Map.entry("HEADERS_TOO_LARGE", BadRequestException.class),
            Map.entry("INTERNAL", SandglassException.class),
            Map.entry("REDIS_UNAVAILABLE", ServiceUnavailableException.class),
            Map.entry("SHUTTING_DOWN", ServiceUnavailableException.class),
            Map.entry("NOT_READY", ServiceUnavailableException.class),
            Map.entry("INCOMPATIBLE_STORAGE", ServiceUnavailableException.class),
            Map.entry("REDIS_FULL", ServiceUnavailableException.class),
            Map.entry("A_CODE_FROM_THE_FUTURE", SandglassException.class));
    for (Map.Entry<String, Class<?>> entry : expected.entrySet()) {
      SandglassException e = answer(418, entry.getKey());
      assertEquals(entry.getValue(), e.getClass(), entry.getKey());
      assertEquals(entry.getKey(), e.code());
      assertEquals(418, e.status());
      assertTrue(e.getMessage().contains("the text"), "the message is the API's: " + e.getMessage());
    }
    assertTrue(answer(409, "STALE_TOKEN") instanceof ConflictException, "a stale token is a conflict");
    assertTrue(answer(403, "FORBIDDEN_SCOPE") instanceof ForbiddenException, "a missing scope is forbidden");
  }

  @Test
  public void keepsTheStatusOfAnAnswerThatIsNotTheApis() {
    SandglassException e = ErrorMapping.toException(502, "<html>Bad Gateway</html>");
    assertEquals(SandglassException.class, e.getClass());
    assertEquals("HTTP_502", e.code());
    assertEquals(502, e.status());
    assertTrue(e.getMessage().contains("Bad Gateway"), e.getMessage());
    assertEquals("HTTP_500", ErrorMapping.toException(500, "{\"message\":\"no error object\"}").code());
    assertEquals("HTTP_503", ErrorMapping.toException(503, "").code());
  }
}
