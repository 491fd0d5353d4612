package dev.sandglass.client;

import static dev.sandglass.client.Assert.assertEquals;
import static dev.sandglass.client.Assert.assertThrows;
import static dev.sandglass.client.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/** The verifier against docs/webhook-signature-vectors.json, the vectors every sandglass verifier passes. */
public final class WebhookVerifierTest {
  private static final Duration TOLERANCE = Duration.ofMinutes(5);

  /** The vectors file: {@code SANDGLASS_VECTORS}, or docs/ found from the working folder upwards. */
  private static Map<?, ?> vectors() throws IOException {
    String configured = System.getenv("SANDGLASS_VECTORS");
    Path path = configured != null ? Path.of(configured) : null;
    for (Path dir = Path.of("").toAbsolutePath(); path == null && dir != null; dir = dir.getParent()) {
      Path candidate = dir.resolve("docs/webhook-signature-vectors.json");
      if (Files.exists(candidate)) path = candidate;
    }
    if (path == null) throw new AssertionError("docs/webhook-signature-vectors.json not found (set SANDGLASS_VECTORS)");
    return (Map<?, ?>) Json.parse(Files.readString(path, StandardCharsets.UTF_8));
  }

  private static Clock at(long unixSeconds) {
    return Clock.fixed(Instant.ofEpochSecond(unixSeconds), ZoneOffset.UTC);
  }

  private static boolean check(Map<?, ?> vector) {
    long timestamp = ((Number) vector.get("timestamp")).longValue();
    byte[] body = HexFormat.of().parseHex((String) vector.get("bodyHex"));
    assertEquals(vector.get("body"), new String(body, StandardCharsets.UTF_8), "bodyHex is the body's UTF-8");
    return WebhookVerifier.verify((String) vector.get("secret"), Long.toString(timestamp), body, (String) vector.get("signature"), TOLERANCE, at(timestamp));
  }

  @Test
  public void acceptsEveryValidVector() throws IOException {
    List<?> valid = (List<?>) vectors().get("valid");
    assertTrue(valid.size() >= 5, "the vectors file lists valid vectors");
    for (Object vector : valid) assertTrue(check((Map<?, ?>) vector), "accepted: " + ((Map<?, ?>) vector).get("name"));
  }

  @Test
  public void refusesEveryInvalidVector() throws IOException {
    List<?> invalid = (List<?>) vectors().get("invalid");
    assertTrue(invalid.size() >= 4, "the vectors file lists invalid vectors");
    for (Object vector : invalid) assertTrue(!check((Map<?, ?>) vector), "refused: " + ((Map<?, ?>) vector).get("name"));
  }

  @Test
  public void signsAsTheServiceDoes() throws IOException {
    for (Object item : (List<?>) vectors().get("valid")) {
      Map<?, ?> vector = (Map<?, ?>) item;
      WebhookVerifier verifier = new WebhookVerifier((String) vector.get("secret"), TOLERANCE, Clock.systemUTC());
      byte[] body = HexFormat.of().parseHex((String) vector.get("bodyHex"));
      assertEquals(vector.get("signature"), verifier.sign(((Number) vector.get("timestamp")).longValue(), body));
    }
  }

  @Test
  public void refusesATimestampOutsideTheTolerance() {
    String secret = "whsec-test-0123456789abcdef";
    byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
    String signature = new WebhookVerifier(secret, TOLERANCE, Clock.systemUTC()).sign(1_000_000, body);
    assertTrue(WebhookVerifier.verify(secret, "1000000", body, signature, TOLERANCE, at(1_000_300)), "300 s later: accepted");
    assertTrue(WebhookVerifier.verify(secret, "1000000", body, signature, TOLERANCE, at(999_700)), "300 s earlier: accepted");
    assertTrue(!WebhookVerifier.verify(secret, "1000000", body, signature, TOLERANCE, at(1_000_301)), "301 s later: refused");
    assertTrue(!WebhookVerifier.verify(secret, "1000000", body, signature, TOLERANCE, at(999_699)), "301 s earlier: refused");
    assertTrue(!WebhookVerifier.verify(secret, "1000000", body, signature), "today, with the system clock: refused");
  }

  @Test
  public void refusesMalformedHeaders() {
    String secret = "whsec-test-0123456789abcdef";
    byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
    WebhookVerifier verifier = new WebhookVerifier(secret, TOLERANCE, at(1_000_000));
    String signature = verifier.sign(1_000_000, body);
    assertTrue(verifier.verify("1000000", body, " " + signature.toUpperCase().replace("V1=", "v1=") + " "), "hex in upper case, spaces around");
    for (String header : new String[] {null, "", "v1=", "v2=" + signature.substring(3), signature + "00", signature.substring(0, 66), "v1=" + "zz".repeat(32)})
      assertTrue(!verifier.verify("1000000", body, header), "refused header " + header);
    for (String timestamp : new String[] {null, "", "-1", "1e6", " 1000000", "1000000.5", "1234567890123456"})
      assertTrue(!verifier.verify(timestamp, body, signature), "refused timestamp " + timestamp);
  }

  @Test
  public void refusesShortSecrets() {
    assertThrows(IllegalArgumentException.class, () -> WebhookVerifier.verify("fifteen-chars!!", "1", new byte[0], "v1="));
    assertThrows(IllegalArgumentException.class, () -> WebhookVerifier.verify("", "1", new byte[0], "v1="));
    assertThrows(IllegalArgumentException.class, () -> WebhookVerifier.verify(null, "1", new byte[0], "v1="));
    new WebhookVerifier("sixteen-chars!!!", TOLERANCE, Clock.systemUTC());
    String message = assertThrows(IllegalArgumentException.class, () -> new WebhookVerifier("short-secret", TOLERANCE, Clock.systemUTC())).getMessage();
    assertTrue(!message.contains("short-secret"), "the message does not show the secret");
  }
}
