package dev.sandglass.client;

import java.lang.reflect.Array;
import java.lang.reflect.RecordComponent;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The client's own JSON reader and writer (RFC 8259), so that the client has no dependency.
 *
 * <p>Parsed values are a tree of {@link Map} (insertion order kept), {@link List}, {@link String},
 * {@link Long} (integers that fit), {@link BigInteger} (integers that do not), {@link BigDecimal}
 * (numbers with a fraction or an exponent), {@link Boolean} and {@code null}. No number goes through
 * a {@code double}: {@code 9007199254740993} stays exactly that.
 *
 * <p>The writer takes the same tree, plus any {@link Number}, {@link Collection}, arrays, records
 * (written as objects of their components) and {@link RawJson} (written verbatim).
 */
public final class Json {
  /** Deeper nesting is refused, rather than overflowing the stack (the service allows 64 levels). */
  private static final int MAX_DEPTH = 512;

  private Json() {}

  /**
   * A JSON text to send as it is (see {@link RawJson}).
   *
   * @param text one well-formed JSON value
   * @return the text, checked
   * @throws JsonException when the text is not well-formed JSON
   */
  public static RawJson raw(String text) {
    return new RawJson(text);
  }

  /**
   * Parses one JSON value (whitespace around it allowed, nothing else).
   *
   * @param text the JSON text
   * @return the value as a tree (see the class comment)
   * @throws JsonException when the text is not well-formed JSON, naming the position
   */
  public static Object parse(String text) {
    if (text == null) throw new JsonException("Expected JSON text, got null");
    Parser parser = new Parser(text);
    parser.skipWhitespace();
    Object value = parser.value(0);
    parser.skipWhitespace();
    if (parser.pos < text.length()) throw parser.error("unexpected text after the JSON value");
    return value;
  }

  /**
   * Writes a value as compact JSON text.
   *
   * @param value a tree of maps, collections, arrays, records, strings, numbers, booleans, nulls or
   *     {@link RawJson}
   * @return the JSON text
   * @throws JsonException for a value without a JSON form (NaN, infinity, a non-string map key, an
   *     unknown type)
   */
  public static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out, 0);
    return out.toString();
  }

  private static void write(Object value, StringBuilder out, int depth) {
    if (depth > MAX_DEPTH) throw new JsonException("Value nested deeper than " + MAX_DEPTH + " levels (a cycle?)");
    if (value == null) {
      out.append("null");
    } else if (value instanceof RawJson raw) {
      out.append(raw.text());
    } else if (value instanceof CharSequence || value instanceof Character) {
      writeString(value.toString(), out);
    } else if (value instanceof Boolean) {
      out.append(value);
    } else if (value instanceof Number number) {
      writeNumber(number, out);
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> entry : map.entrySet()) {
        if (!(entry.getKey() instanceof String key))
          throw new JsonException("JSON object keys must be strings, got " + typeName(entry.getKey()));
        if (!first) out.append(',');
        first = false;
        writeString(key, out);
        out.append(':');
        write(entry.getValue(), out, depth + 1);
      }
      out.append('}');
    } else if (value instanceof Collection<?> collection) {
      out.append('[');
      boolean first = true;
      for (Object item : collection) {
        if (!first) out.append(',');
        first = false;
        write(item, out, depth + 1);
      }
      out.append(']');
    } else if (value.getClass().isArray()) {
      out.append('[');
      for (int i = 0; i < Array.getLength(value); i++) {
        if (i > 0) out.append(',');
        write(Array.get(value, i), out, depth + 1);
      }
      out.append(']');
    } else if (value instanceof Record record) {
      write(recordAsMap(record), out, depth);
    } else if (value instanceof Enum<?> constant) {
      writeString(constant.name(), out);
    } else {
      throw new JsonException(
          "Cannot write a " + typeName(value) + " as JSON: pass a Map, List, String, Number, Boolean, null, a record or Json.raw(text)");
    }
  }

  private static Map<String, Object> recordAsMap(Record record) {
    Map<String, Object> map = new LinkedHashMap<>();
    for (RecordComponent component : record.getClass().getRecordComponents()) {
      try {
        component.getAccessor().setAccessible(true);
        map.put(component.getName(), component.getAccessor().invoke(record));
      } catch (ReflectiveOperationException e) {
        throw new JsonException("Cannot read component " + component.getName() + " of " + typeName(record) + ": " + e);
      }
    }
    return map;
  }

  private static void writeNumber(Number number, StringBuilder out) {
    if (number instanceof Double || number instanceof Float) {
      double d = number.doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) throw new JsonException("JSON has no " + d + " (NaN and infinities cannot be written)");
      // Integral doubles are written as integers (1.0 -> 1), as JavaScript writes them.
      if (d == Math.rint(d) && Math.abs(d) < 1e15) out.append((long) d);
      else out.append(number instanceof Float ? Float.toString((Float) number) : Double.toString(d));
    } else if (number instanceof BigDecimal decimal) {
      out.append(decimal.toString());
    } else {
      // Byte, Short, Integer, Long, BigInteger, AtomicLong...: their digits, exactly.
      String digits = number.toString();
      if (!digits.matches("-?[0-9]+")) throw new JsonException("Cannot write the number " + digits + " as JSON");
      out.append(digits);
    }
  }

  private static void writeString(String text, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          boolean loneSurrogate =
              Character.isSurrogate(c)
                  && !(Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1)))
                  && !(Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(text.charAt(i - 1)));
          // Control characters must be escaped; a lone surrogate has no UTF-8 form, so it is escaped
          // rather than turned into '?' by the encoder. Everything else goes as is (UTF-8 on the wire).
          if (c < 0x20 || loneSurrogate) out.append(String.format("\\u%04x", (int) c));
          else out.append(c);
        }
      }
    }
    out.append('"');
  }

  private static String typeName(Object value) {
    return value == null ? "null" : value.getClass().getName();
  }

  /** A recursive-descent parser over one text; {@code pos} is the next character to read. */
  private static final class Parser {
    private final String text;
    private int pos;

    Parser(String text) {
      this.text = text;
    }

    Object value(int depth) {
      if (depth > MAX_DEPTH) throw error("JSON nested deeper than " + MAX_DEPTH + " levels");
      if (pos >= text.length()) throw error("unexpected end of the text, expected a value");
      char c = text.charAt(pos);
      return switch (c) {
        case '{' -> object(depth);
        case '[' -> array(depth);
        case '"' -> string();
        case 't' -> literal("true", Boolean.TRUE);
        case 'f' -> literal("false", Boolean.FALSE);
        case 'n' -> literal("null", null);
        default -> {
          if (c == '-' || (c >= '0' && c <= '9')) yield number();
          throw error("unexpected character " + describe(c) + ", expected a value");
        }
      };
    }

    private Map<String, Object> object(int depth) {
      pos++; // {
      Map<String, Object> map = new LinkedHashMap<>();
      skipWhitespace();
      if (peek() == '}') {
        pos++;
        return map;
      }
      while (true) {
        skipWhitespace();
        if (peek() != '"') throw error("expected a string key");
        String key = string();
        skipWhitespace();
        expect(':');
        skipWhitespace();
        // A repeated key: the last one wins, as JSON.parse does on the service.
        map.put(key, value(depth + 1));
        skipWhitespace();
        char c = next("',' or '}'");
        if (c == '}') return map;
        if (c != ',') throw error(-1, "expected ',' or '}', got " + describe(c));
      }
    }

    private List<Object> array(int depth) {
      pos++; // [
      List<Object> list = new ArrayList<>();
      skipWhitespace();
      if (peek() == ']') {
        pos++;
        return list;
      }
      while (true) {
        skipWhitespace();
        list.add(value(depth + 1));
        skipWhitespace();
        char c = next("',' or ']'");
        if (c == ']') return list;
        if (c != ',') throw error(-1, "expected ',' or ']', got " + describe(c));
      }
    }

    private String string() {
      pos++; // "
      StringBuilder out = new StringBuilder();
      while (true) {
        if (pos >= text.length()) throw error("unterminated string");
        char c = text.charAt(pos++);
        if (c == '"') return out.toString();
        if (c < 0x20) throw error(-1, "unescaped control character " + describe(c) + " in a string");
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char escape = next("an escape character");
        switch (escape) {
          case '"' -> out.append('"');
          case '\\' -> out.append('\\');
          case '/' -> out.append('/');
          case 'b' -> out.append('\b');
          case 'f' -> out.append('\f');
          case 'n' -> out.append('\n');
          case 'r' -> out.append('\r');
          case 't' -> out.append('\t');
          // Java strings are UTF-16, as JSON escapes are: a pair \ud83d\ude80 becomes one code point.
          case 'u' -> out.append(hex4());
          default -> throw error(-1, "invalid escape \\" + escape);
        }
      }
    }

    private char hex4() {
      if (pos + 4 > text.length()) throw error("incomplete \\u escape");
      int code = 0;
      for (int i = 0; i < 4; i++) {
        int digit = Character.digit(text.charAt(pos + i), 16);
        if (digit < 0) throw error("invalid \\u escape, expected 4 hex digits");
        code = code * 16 + digit;
      }
      pos += 4;
      return (char) code;
    }

    private Number number() {
      int start = pos;
      if (peek() == '-') pos++;
      if (peek() == '0') {
        pos++;
      } else if (isDigit(peek())) {
        while (isDigit(peek())) pos++;
      } else {
        throw error("expected a digit");
      }
      boolean integral = true;
      if (peek() == '.') {
        integral = false;
        pos++;
        if (!isDigit(peek())) throw error("expected a digit after '.'");
        while (isDigit(peek())) pos++;
      }
      if (peek() == 'e' || peek() == 'E') {
        integral = false;
        pos++;
        if (peek() == '+' || peek() == '-') pos++;
        if (!isDigit(peek())) throw error("expected a digit in the exponent");
        while (isDigit(peek())) pos++;
      }
      if (isDigit(peek())) throw error("leading zeros are not allowed");
      String digits = text.substring(start, pos);
      if (!integral) return new BigDecimal(digits);
      BigInteger big = new BigInteger(digits);
      return big.bitLength() < 64 ? (Number) big.longValue() : big;
    }

    private Object literal(String word, Object value) {
      if (!text.startsWith(word, pos)) throw error("unexpected text, expected " + word);
      pos += word.length();
      return value;
    }

    void skipWhitespace() {
      while (pos < text.length()) {
        char c = text.charAt(pos);
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
        pos++;
      }
    }

    private char peek() {
      return pos < text.length() ? text.charAt(pos) : '\0';
    }

    private char next(String expected) {
      if (pos >= text.length()) throw error("unexpected end of the text, expected " + expected);
      return text.charAt(pos++);
    }

    private void expect(char c) {
      char got = next("'" + c + "'");
      if (got != c) throw error(-1, "expected '" + c + "', got " + describe(got));
    }

    private static boolean isDigit(char c) {
      return c >= '0' && c <= '9';
    }

    private static String describe(char c) {
      return c >= 0x20 && c < 0x7f ? "'" + c + "'" : String.format("U+%04X", (int) c);
    }

    JsonException error(String message) {
      return error(0, message);
    }

    JsonException error(int offset, String message) {
      return new JsonException("Invalid JSON at position " + (pos + offset) + ": " + message);
    }
  }

  /** An unmodifiable empty object, for bodies without fields. */
  static Map<String, Object> emptyObject() {
    return Collections.emptyMap();
  }
}
