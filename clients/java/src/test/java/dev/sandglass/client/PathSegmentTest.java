package dev.sandglass.client;

import static dev.sandglass.client.Assert.assertEquals;
import static dev.sandglass.client.Assert.assertThrows;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/** Ids in paths: RFC 3986 percent-encoding of a segment, never form encoding. */
public final class PathSegmentTest {
  @Test
  public void encodesEverythingButUnreserved() {
    assertEquals("order%2F42%20a%2Bb%25c%20Z%C3%BCrich", PathSegment.encode("order/42 a+b%c Zürich"));
    assertEquals("order%3A42%2Fa", PathSegment.encode("order:42/a"), "the docs' example");
    assertEquals("AZaz09-._~", PathSegment.encode("AZaz09-._~"));
    assertEquals("%2A%21%27%28%29%3F%23%26%3D%40%22%3C%3E%5C%5E%60%7B%7C%7D%5B%5D", PathSegment.encode("*!'()?#&=@\"<>\\^`{|}[]"));
    assertEquals("%F0%9F%9A%80%D0%B7", PathSegment.encode("🚀з"));
  }

  @Test
  public void neverWritesASpaceAsPlus() {
    String encoded = PathSegment.encode("a b+c");
    assertEquals("a%20b%2Bc", encoded);
    // The service decodes a path exactly (RFC 3986); so does URI: the id comes back unchanged.
    assertEquals("/a b+c", URI.create("/" + encoded).getPath());
    // What URLEncoder would have sent reads back as another id.
    assertEquals("a b c", URLDecoder.decode("a+b+c", StandardCharsets.UTF_8));
  }

  @Test
  public void refusesALoneSurrogate() {
    assertThrows(IllegalArgumentException.class, () -> PathSegment.encode("a\ud83d"));
  }
}
