package dev.sandglass.client;

import java.util.List;
import java.util.Map;

/** Reads the fields of an answer object, failing with a clear message when the answer is not the API's. */
final class Fields {
  private final Map<?, ?> map;
  private final String what;

  private Fields(Map<?, ?> map, String what) {
    this.map = map;
    this.what = what;
  }

  static Fields of(Object value, String what) {
    if (!(value instanceof Map<?, ?> map)) throw unexpected(what, "an object", value);
    return new Fields(map, what);
  }

  Object value(String name) {
    return map.get(name);
  }

  boolean has(String name) {
    return map.containsKey(name);
  }

  String string(String name) {
    Object value = map.get(name);
    if (!(value instanceof String text)) throw unexpected(what + "." + name, "a string", value);
    return text;
  }

  String optionalString(String name) {
    return map.get(name) == null ? null : string(name);
  }

  long number(String name) {
    Object value = map.get(name);
    if (!(value instanceof Long number)) throw unexpected(what + "." + name, "an integer", value);
    return number;
  }

  Long optionalNumber(String name) {
    return map.get(name) == null ? null : number(name);
  }

  Integer optionalInt(String name) {
    return map.get(name) == null ? null : Math.toIntExact(number(name));
  }

  List<?> list(String name) {
    Object value = map.get(name);
    if (!(value instanceof List<?> list)) throw unexpected(what + "." + name, "an array", value);
    return list;
  }

  ScheduleRef schedule() {
    if (map.get("schedule") == null) return null;
    Fields schedule = of(map.get("schedule"), what + ".schedule");
    return new ScheduleRef(schedule.string("key"), schedule.number("tickAt"));
  }

  private static SandglassException unexpected(String where, String expected, Object got) {
    String shown = got == null ? "nothing" : Json.write(got);
    if (shown.length() > 100) shown = shown.substring(0, 100) + "...";
    return new SandglassException(200, "UNEXPECTED_ANSWER", "expected " + where + " to be " + expected + ", got " + shown);
  }
}
