package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * build-tools/build-fatbin.sh's bookkeeping, driven with a fake nvcc (no CUDA needed): one fatbin per .cu
 * listed by the index, a unit recompiled only when its own source, a header or the flags changed, fatbins of
 * deleted units removed, a kernel name exported by two units or a unit that does not compile failing the
 * build with a message naming them, and the missing marker without nvcc.
 */
class BuildFatbinScriptTest {
  /**
   * Records each compile in $CALLS, reports every {@code __global__ void name} of the source as ptxas does
   * with --resource-usage, fails on a source containing BROKEN, and writes the source's path as the fatbin.
   */
  private static final String FAKE_NVCC = """
      #!/usr/bin/env bash
      if [ "$1" = --version ]; then echo "fake nvcc 1.0"; exit 0; fi
      out=""; src=""
      while [ $# -gt 0 ]; do case "$1" in -o) out=$2; shift 2 ;; *) src=$1; shift ;; esac; done
      echo "$(basename "$src")" >> "$CALLS"
      if grep -q BROKEN "$src"; then echo "$src(1): error: identifier BROKEN is undefined"; exit 2; fi
      for k in $(grep -o '__global__ void [A-Za-z0-9_]*' "$src" | cut -d' ' -f3); do
        echo "ptxas info    : Compiling entry function '$k' for 'sm_90'"
        echo "ptxas info    : Compiling entry function '$k' for 'sm_80'"
      done
      echo "fatbin of $src" > "$out"
      """;

  @TempDir Path dir;
  private Path src;
  private Path out;
  private Path calls;
  private String output;

  @BeforeEach
  void sources() throws IOException {
    src = Files.createDirectories(dir.resolve("src"));
    out = dir.resolve("classes/org/gpuvectors/cuda/kernels");
    calls = dir.resolve("calls");
    Path nvcc = dir.resolve("nvcc");
    Files.writeString(nvcc, FAKE_NVCC);
    Files.setPosixFilePermissions(nvcc, PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.writeString(src.resolve("common.cuh"), "#pragma once\n");
    Files.writeString(src.resolve("alpha.cu"), kernels("gv_alpha_k32", "gv_alpha_k64"));
    Files.writeString(src.resolve("beta.cu"), kernels("gv_beta"));
  }

  private static String kernels(String... names) {
    StringBuilder s = new StringBuilder("#include \"common.cuh\"\nextern \"C\" {\n");
    for (String name : names) {
      s.append("__global__ void ").append(name).append("(int x) {}\n");
    }
    return s.append("}\n").toString();
  }

  /** Runs the script with the fake nvcc (or {@code nvcc}); returns its exit status, keeps its output. */
  private int build(String nvcc, String archs) throws IOException, InterruptedException {
    Files.deleteIfExists(calls);
    ProcessBuilder pb = new ProcessBuilder("bash", Path.of("build-tools/build-fatbin.sh").toAbsolutePath().toString(),
        src.toString(), out.toString(), dir.resolve("work").toString()).redirectErrorStream(true);
    pb.environment().put("NVCC", nvcc);
    pb.environment().put("GV_CUDA_ARCHS", archs);
    pb.environment().put("CALLS", calls.toString());
    pb.environment().remove("NVCC_JOBS");
    pb.environment().remove("NVCC_THREADS");
    Process p = pb.start();
    output = new String(p.getInputStream().readAllBytes());
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "build-fatbin.sh finished");
    return p.exitValue();
  }

  private int build() throws IOException, InterruptedException {
    return build(dir.resolve("nvcc").toString(), "sm90");
  }

  private List<String> compiled() throws IOException {
    return Files.exists(calls) ? Files.readAllLines(calls).stream().sorted().toList() : List.of();
  }

  private List<String> outputFiles() throws IOException {
    try (Stream<Path> files = Files.list(out)) {
      return files.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  void buildsEachUnitOnceAndAgainOnlyWhenItsInputsChange() throws Exception {
    assertEquals(0, build(), output);
    assertEquals(List.of("alpha.cu", "beta.cu"), compiled(), output);
    assertEquals(List.of("alpha.fatbin", "beta.fatbin", "index"), outputFiles());
    assertEquals(List.of("alpha.fatbin", "beta.fatbin"), Files.readAllLines(out.resolve("index")));
    assertEquals("fatbin of " + src.resolve("beta.cu"), Files.readString(out.resolve("beta.fatbin")).trim());
    assertTrue(output.contains("alpha: ") && output.contains("2 kernels"), output);
    assertTrue(output.contains("nvcc built 2 of 2 units"), output);

    assertEquals(0, build(), output);
    assertEquals(List.of(), compiled(), "nothing changed: " + output);
    assertTrue(output.contains("kernels up to date (2 units"), output);

    Files.writeString(src.resolve("beta.cu"), kernels("gv_beta", "gv_beta_2"));
    assertEquals(0, build(), output);
    assertEquals(List.of("beta.cu"), compiled(), "only the changed unit: " + output);

    Files.writeString(src.resolve("common.cuh"), "#pragma once\n#define GV_X 1\n");
    assertEquals(0, build(), output);
    assertEquals(List.of("alpha.cu", "beta.cu"), compiled(), "a header change rebuilds every unit: " + output);

    assertEquals(0, build(dir.resolve("nvcc").toString(), "lean"));
    assertEquals(List.of("alpha.cu", "beta.cu"), compiled(), "other archs rebuild every unit: " + output);
  }

  @Test
  void buildsWithoutHeaders() throws Exception {
    Files.delete(src.resolve("common.cuh"));
    assertEquals(0, build(), output);
    assertEquals(List.of("alpha.cu", "beta.cu"), compiled(), output);
  }

  @Test
  void removesTheFatbinOfADeletedUnit() throws Exception {
    assertEquals(0, build(), output);
    Files.delete(src.resolve("beta.cu"));
    assertEquals(0, build(), output);
    assertEquals(List.of(), compiled(), output);
    assertEquals(List.of("alpha.fatbin", "index"), outputFiles());
    assertEquals(List.of("alpha.fatbin"), Files.readAllLines(out.resolve("index")));
  }

  @Test
  void failsWhenTwoUnitsExportOneKernelName() throws Exception {
    Files.writeString(src.resolve("gamma.cu"), kernels("gv_gamma", "gv_alpha_k64"));
    assertEquals(1, build(), output);
    assertTrue(output.contains("a kernel is defined in two compile units"), output);
    assertTrue(output.contains("gv_alpha_k64 in alpha.cu and gamma.cu"), output);
    assertFalse(output.contains("gv_alpha_k32 in"), output);
    assertFalse(Files.exists(out.resolve("index")), "no index for an inconsistent build");
  }

  @Test
  void failsWithTheCompilerErrorsOfAUnitThatDoesNotCompile() throws Exception {
    Files.writeString(src.resolve("gamma.cu"), kernels("gv_gamma") + "BROKEN\n");
    assertEquals(1, build(), output);
    assertTrue(output.contains("nvcc FAILED for gamma.cu"), output);
    assertTrue(output.contains("identifier BROKEN is undefined"), output);
    assertFalse(Files.exists(out.resolve("gamma.fatbin")), output);
    assertFalse(Files.exists(out.resolve("gamma.fatbin.tmp")), output);
    assertEquals(List.of("alpha.cu", "beta.cu", "gamma.cu"), compiled(), "the other units still compile");

    Files.writeString(src.resolve("gamma.cu"), kernels("gv_gamma"));
    assertEquals(0, build(), output);
    assertEquals(List.of("gamma.cu"), compiled(), "the fixed unit alone: " + output);
  }

  @Test
  void withoutNvccWritesTheReasonInsteadOfKernels() throws Exception {
    assertEquals(0, build(), output);
    assertEquals(0, build("none", "sm90"), output);
    assertEquals(List.of("index.missing"), outputFiles());
    assertEquals("GPU kernels were not built (nvcc was not found at build time)",
        Files.readString(out.resolve("index.missing")).trim());

    assertEquals(0, build(), output);
    assertEquals(List.of("alpha.cu", "beta.cu"), compiled(), "built again once nvcc is back: " + output);
    assertEquals(List.of("alpha.fatbin", "beta.fatbin", "index"), outputFiles());
  }
}
