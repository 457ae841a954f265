package org.gpuvectors.cuda;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

/**
 * Test-only: sets every primitive instance field of a parameter object to a value no other field holds (longs with
 * all eight bytes non-zero, so a member written at the wrong offset or width shows), by reflection: the parameter
 * classes expose no setters for their encoded fields. A field named {@code pad} (a struct's alignment filler, never
 * set) stays zero.
 */
public final class DistinctFields {
  private DistinctFields() {}

  /** {@code params} with its fields filled; returns it. */
  public static <T> T fill(T params) {
    int i = 0;
    for (Field f : params.getClass().getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers()) || !f.getType().isPrimitive() || f.getName().equals("pad")) {
        continue;
      }
      i++;
      f.setAccessible(true); // the build steps' parameter classes live in another package
      try {
        if (f.getType() == long.class) {
          f.setLong(params, 0x0102030405060708L * i + 0x1000L);
        } else if (f.getType() == int.class) {
          f.setInt(params, 0x01010101 * i + 7);
        } else if (f.getType() == float.class) {
          f.setFloat(params, 1.25f * i);
        } else if (f.getType() == boolean.class) {
          f.setBoolean(params, true);
        } else {
          throw new AssertionError("unexpected field type: " + f);
        }
      } catch (IllegalAccessException e) {
        throw new AssertionError(e);
      }
    }
    return params;
  }
}
