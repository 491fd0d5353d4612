package dev.sandglass.client;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Checks the signature of a webhook request from {@code sandglass serve}: the {@code
 * Sandglass-Signature} header is {@code v1=} and the hex HMAC-SHA256, keyed with the UTF-8 bytes
 * of the secret (never hex-decoded, even when it looks like hex), of {@code <timestamp>.<body>},
 * the timestamp being the {@code Sandglass-Timestamp} header (unix seconds). The same rules as the
 * service's own {@code verifySignature}.
 *
 * <pre>{@code
 * if (!WebhookVerifier.verify(secret, request.getHeader("Sandglass-Timestamp"), rawBody,
 *     request.getHeader("Sandglass-Signature"))) return 401;
 * }</pre>
 *
 * <p>Pass the body's bytes as received, before any JSON parsing: a re-serialized body does not match.
 */
public final class WebhookVerifier {
  /** Shortest secret accepted, in characters: a short HMAC key can be guessed offline from one request. */
  public static final int MIN_SECRET_LENGTH = 16;
  /** How far a request's timestamp may be from the receiver's clock, either way, by default. */
  public static final Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

  private static final Pattern SIGNATURE = Pattern.compile("^v1=([0-9a-fA-F]{64})$");
  private static final Pattern TIMESTAMP = Pattern.compile("^[0-9]{1,15}$");

  private final byte[] key;
  private final Duration tolerance;
  private final Clock clock;

  /**
   * @param secret the binding's secret, at least 16 characters
   * @param tolerance the largest distance between the request's timestamp and now
   * @param clock the receiver's clock (a fixed one in tests)
   * @throws IllegalArgumentException when the secret is null or shorter than 16 characters: an unset
   *     secret must not become an empty HMAC key anyone can sign with
   */
  public WebhookVerifier(String secret, Duration tolerance, Clock clock) {
    if (secret == null || secret.length() < MIN_SECRET_LENGTH)
      throw new IllegalArgumentException(
          "Expected the webhook secret to be a string of at least " + MIN_SECRET_LENGTH + " characters, got "
              + (secret == null ? "null" : secret.length() + " characters"));
    this.key = secret.getBytes(StandardCharsets.UTF_8);
    this.tolerance = tolerance;
    this.clock = clock;
  }

  /**
   * Checks a request with the default tolerance (5 minutes) and the system clock.
   *
   * @param secret the binding's secret, at least 16 characters
   * @param timestamp the {@code Sandglass-Timestamp} header
   * @param body the raw body bytes
   * @param signatureHeader the {@code Sandglass-Signature} header
   * @return true when the signature matches and the timestamp is within the tolerance
   * @throws IllegalArgumentException when the secret is shorter than 16 characters
   */
  public static boolean verify(String secret, String timestamp, byte[] body, String signatureHeader) {
    return new WebhookVerifier(secret, DEFAULT_TOLERANCE, Clock.systemUTC()).verify(timestamp, body, signatureHeader);
  }

  /**
   * Checks a request with a tolerance and a clock of your own.
   *
   * @param secret the binding's secret, at least 16 characters
   * @param timestamp the {@code Sandglass-Timestamp} header
   * @param body the raw body bytes
   * @param signatureHeader the {@code Sandglass-Signature} header
   * @param tolerance the largest distance between the timestamp and now
   * @param clock the receiver's clock
   * @return true when the signature matches and the timestamp is within the tolerance
   */
  public static boolean verify(String secret, String timestamp, byte[] body, String signatureHeader, Duration tolerance, Clock clock) {
    return new WebhookVerifier(secret, tolerance, clock).verify(timestamp, body, signatureHeader);
  }

  /**
   * @param timestamp the {@code Sandglass-Timestamp} header (unix seconds)
   * @param body the raw body bytes
   * @param signatureHeader the {@code Sandglass-Signature} header
   * @return true when the signature matches and the timestamp is within the tolerance
   */
  public boolean verify(String timestamp, byte[] body, String signatureHeader) {
    if (timestamp == null || !TIMESTAMP.matcher(timestamp).matches() || body == null) return false;
    double nowSeconds = clock.millis() / 1000.0;
    if (Math.abs(nowSeconds - Long.parseLong(timestamp)) > tolerance.toMillis() / 1000.0) return false;
    if (signatureHeader == null) return false;
    Matcher given = SIGNATURE.matcher(signatureHeader.trim());
    if (!given.matches()) return false;
    // Both sides are 32 bytes; isEqual takes the same time wherever they differ.
    return MessageDigest.isEqual(HexFormat.of().parseHex(given.group(1)), hmac(timestamp, body));
  }

  /**
   * The header a request with this timestamp and body carries (for tests of a receiver).
   *
   * @param timestamp unix seconds
   * @param body the body bytes
   * @return {@code v1=<hex>}
   */
  public String sign(long timestamp, byte[] body) {
    return "v1=" + HexFormat.of().formatHex(hmac(Long.toString(timestamp), body));
  }

  private byte[] hmac(String timestamp, byte[] body) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      mac.update((timestamp + ".").getBytes(StandardCharsets.US_ASCII));
      return mac.doFinal(body);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
    }
  }

  /** Without the secret. */
  @Override
  public String toString() {
    return "WebhookVerifier[tolerance=" + tolerance + "]";
  }
}
