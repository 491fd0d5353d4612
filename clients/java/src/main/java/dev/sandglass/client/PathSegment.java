package dev.sandglass.client;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Percent-encoding of one URL path segment (RFC 3986): the UTF-8 bytes of the text, every byte
 * other than an unreserved character ({@code A-Z a-z 0-9 - . _ ~}) written as {@code %XX}.
 *
 * <p>Not {@link java.net.URLEncoder}: that is HTML form encoding, which writes a space as {@code +}
 * while the service reads a {@code +} in a path as a plus ({@code a+b} is the id {@code a+b}), and
 * it leaves {@code *} literal. Job id {@code order/42 a+b} is {@code order%2F42%20a%2Bb} here.
 */
public final class PathSegment {
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private PathSegment() {}

  /**
   * Encodes one path segment.
   *
   * @param text the segment (a job id, a queue name), any Unicode text
   * @return the text percent-encoded, safe to put between two {@code /}
   * @throws IllegalArgumentException when the text holds a lone surrogate (it has no UTF-8 form;
   *     silently sending {@code ?} instead would name another job)
   */
  public static String encode(String text) {
    if (text == null) throw new IllegalArgumentException("Expected a path segment, got null");
    StringBuilder out = new StringBuilder(text.length() * 3);
    for (byte b : utf8(text)) {
      int c = b & 0xff;
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~') {
        out.append((char) c);
      } else {
        out.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
      }
    }
    return out.toString();
  }

  private static byte[] utf8(String text) {
    CharsetEncoder encoder =
        StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
    try {
      ByteBuffer bytes = encoder.encode(CharBuffer.wrap(text));
      byte[] out = new byte[bytes.remaining()];
      bytes.get(out);
      return out;
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("The path segment holds a lone UTF-16 surrogate, which has no UTF-8 form", e);
    }
  }
}
