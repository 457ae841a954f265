package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.gpuvectors.cuda.runtime.StructLayout.Member;
import org.gpuvectors.cuda.runtime.StructLayout.Type;

/**
 * Test-only: the parameter structs of {@code common.cuh}, read from the source itself and laid out as nvcc does
 * (each member at a multiple of its size, the struct's size a multiple of its largest member's), independently of
 * {@link org.gpuvectors.cuda.runtime.StructLayout}: the oracle the Java declarations are checked against.
 */
final class CommonCuhStructs {
  private CommonCuhStructs() {}

  private static final Pattern MEMBER =
      Pattern.compile("^\\s*(?:const\\s+)?([A-Za-z_][A-Za-z0-9_ ]*?)\\s*(\\*?)\\s*([A-Za-z_][A-Za-z0-9_]*)\\s*;");

  static String source() throws IOException {
    return Files.readString(Path.of("src/main/cuda/common.cuh"));
  }

  /** The members of {@code struct name { ... };} in order, with their types and offsets. */
  static List<Member> members(String name) throws IOException {
    String header = source();
    int start = header.indexOf("struct " + name + " {");
    assertTrue(start >= 0, "struct " + name + " in common.cuh");
    int end = header.indexOf("};", start);
    List<Member> members = new ArrayList<>();
    int offset = 0;
    for (String line : header.substring(header.indexOf('{', start) + 1, end).split("\n")) {
      Matcher m = MEMBER.matcher(line);
      if (m.find()) {
        Type type = type(m.group(1).trim(), !m.group(2).isEmpty(), line);
        offset = (offset + type.bytes - 1) / type.bytes * type.bytes;
        members.add(new Member(m.group(3), type, offset));
        offset += type.bytes;
      }
    }
    return members;
  }

  /**
   * {@code sizeof(name)}: past its last member, rounded up to its largest member; equal to the size its {@code
   * static_assert} states, where it has one (which checks this reading of the source).
   */
  static int sizeof(String name) throws IOException {
    List<Member> members = members(name);
    int align = members.stream().mapToInt(m -> m.type().bytes).max().orElse(1);
    Member last = members.get(members.size() - 1);
    int size = (last.offset() + last.type().bytes + align - 1) / align * align;
    Matcher asserted = Pattern.compile("static_assert\\(sizeof\\(" + name + "\\) == (\\d+),").matcher(source());
    if (asserted.find()) {
      assertEquals(Integer.parseInt(asserted.group(1)), size, name + ": the size common.cuh asserts");
    }
    return size;
  }

  private static Type type(String type, boolean pointer, String line) {
    if (pointer || type.equals("long long") || type.equals("unsigned long long")) {
      return Type.I64;
    }
    if (type.equals("int")) {
      return Type.I32;
    }
    if (type.equals("float")) {
      return Type.F32;
    }
    return fail("a member type the Java layouts do not know: " + line);
  }
}
