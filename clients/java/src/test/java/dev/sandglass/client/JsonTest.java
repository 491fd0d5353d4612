package dev.sandglass.client;

import static dev.sandglass.client.Assert.assertEquals;
import static dev.sandglass.client.Assert.assertThrows;
import static dev.sandglass.client.Assert.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The client's JSON reader and writer on the cases that break naive ones. */
public final class JsonTest {
  @Test
  public void readsEveryEscape() {
    assertEquals("\" \\ / \b \f \n \r \t A é", Json.parse("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0041 \\u00e9\""));
  }

  @Test
  public void readsASurrogatePairAsOneCodePoint() {
    String rocket = (String) Json.parse("\"\\ud83d\\ude80\"");
    assertEquals("🚀", rocket);
    assertEquals(1, rocket.codePointCount(0, rocket.length()));
    assertEquals("🚀", Json.parse("\"🚀\""), "literal");
  }

  @Test
  public void writesEscapesAndKeepsNonAsciiLiteral() {
    assertEquals("\"q\\\" b\\\\ n\\n r\\r t\\t b\\b f\\f \\u0001 / Zürich заказ 🚀\"", Json.write("q\" b\\ n\n r\r t\t b\b f\f \u0001 / Zürich заказ 🚀"));
    // A lone surrogate has no UTF-8 form: escaped, so the service reads back the same UTF-16.
    assertEquals("\"\\ud83d!\"", Json.write("\ud83d!"));
    String tricky = "\ud83d\ude80\"\\\u001f\u2028";
    assertEquals(tricky, Json.parse(Json.write(tricky)), "round trip");
  }

  @Test
  public void keepsBigIntegersExact() {
    assertEquals(new BigInteger("9007199254740993"), new BigInteger(Json.parse("9007199254740993").toString()));
    assertEquals(9007199254740993L, Json.parse("9007199254740993"), "fits a long");
    assertEquals(new BigInteger("123456789012345678901234567890"), Json.parse("123456789012345678901234567890"));
    assertEquals(new BigInteger("-123456789012345678901234567890"), Json.parse("-123456789012345678901234567890"));
    assertEquals("{\"id\":123456789012345678901234567890,\"n\":9007199254740993}",
        Json.write(Json.parse("{\"id\":123456789012345678901234567890,\"n\":9007199254740993}")));
    assertEquals("[9007199254740993,18446744073709551617]", Json.write(List.of(9007199254740993L, new BigInteger("18446744073709551617"))));
  }

  @Test
  public void keepsDecimalsExact() {
    assertEquals(new BigDecimal("0.1"), Json.parse("0.1"));
    assertEquals(new BigDecimal("1.000000000000000000001"), Json.parse("1.000000000000000000001"));
    assertEquals(new BigDecimal("-2.5e21"), Json.parse("-2.5e21"));
    assertEquals(new BigDecimal("1E+400"), Json.parse("1e400"), "beyond the double range, not Infinity");
    assertEquals("[0.1,1.5,3]", Json.write(List.of(new BigDecimal("0.1"), 1.5, 3.0)));
    assertEquals(0L, Json.parse("-0"));
  }

  @Test
  public void readsNestedObjectsAndArrays() {
    Object tree = Json.parse(" {\"a\" : [1, {\"b\": [true, false, null, []]}, \"x\"], \"c\": {}, \"d\": {\"e\": {\"f\": -1.5}}} ");
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("e", Map.of("f", new BigDecimal("-1.5")));
    List<Object> inner = new ArrayList<>(Arrays.asList(true, false, null, List.of()));
    Map<String, Object> expected = new LinkedHashMap<>();
    expected.put("a", List.of(1L, Map.of("b", inner), "x"));
    expected.put("c", Map.of());
    expected.put("d", d);
    assertEquals(expected, tree);
    assertEquals("{\"a\":[1,{\"b\":[true,false,null,[]]},\"x\"],\"c\":{},\"d\":{\"e\":{\"f\":-1.5}}}", Json.write(tree));
  }

  @Test
  public void keepsTheOrderOfKeys() {
    assertEquals(List.of("z", "a", "m"), new ArrayList<>(((Map<?, ?>) Json.parse("{\"z\":1,\"a\":2,\"m\":3}")).keySet()));
  }

  record Order(long orderId, String note, List<String> tags) {}

  @Test
  public void writesRecordsArraysAndRaw() {
    assertEquals("{\"orderId\":42,\"note\":\"x\",\"tags\":[\"a\"]}", Json.write(new Order(42, "x", List.of("a"))));
    assertEquals("[1,2]", Json.write(new int[] {1, 2}));
    assertEquals("{\"p\":{\"already\":\"json\"}}", Json.write(Map.of("p", Json.raw("{\"already\":\"json\"}"))));
  }

  @Test
  public void refusesMalformedInputWithItsPosition() {
    String[] malformed = {
      "", " ", "{", "[1,]", "{\"a\":1,}", "{a:1}", "'x'", "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"", "01", "1.", ".5", "1e", "-",
      "+1", "tru", "nul", "[1 2]", "{\"a\" 1}", "1 2", "\"tab\tinside\"", "NaN", "Infinity", "[", "]", "{\"a\":}", "\"\\ud83d\\u\"",
    };
    for (String text : malformed) {
      JsonException e = assertThrows(JsonException.class, () -> Json.parse(text));
      assertTrue(e.getMessage().startsWith("Invalid JSON at position "), "a message with a position for " + text + ": " + e.getMessage());
    }
    assertEquals("Invalid JSON at position 3: expected ',' or ']', got '2'", assertThrows(JsonException.class, () -> Json.parse("[1 2]")).getMessage());
    assertThrows(JsonException.class, () -> Json.raw("{not json}"));
  }

  @Test
  public void refusesNestingDeeperThanItsLimit() {
    assertThrows(JsonException.class, () -> Json.parse("[".repeat(100_000) + "]".repeat(100_000)));
    assertEquals(1, ((List<?>) Json.parse("[".repeat(500) + "]".repeat(500))).size());
  }

  @Test
  public void refusesValuesWithoutAJsonForm() {
    assertThrows(JsonException.class, () -> Json.write(Double.NaN));
    assertThrows(JsonException.class, () -> Json.write(Double.POSITIVE_INFINITY));
    assertThrows(JsonException.class, () -> Json.write(Map.of(1, "x")));
    assertThrows(JsonException.class, () -> Json.write(new Object()));
  }
}
