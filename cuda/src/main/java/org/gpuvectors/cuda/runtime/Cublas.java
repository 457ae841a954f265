package org.gpuvectors.cuda.runtime;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * cuBLAS through a small FFM (java.lang.foreign) binding: the first of libcublas.so.13,
 * libcublas.so.12 (system loader path, then /usr/local/cuda/lib64) that loads; the environment
 * variable GPU_VECTORS_CUBLAS names another. JCublas is not used: it needs libcublas.so.12, which
 * CUDA 13 machines do not have. One handle per device ({@link Handle}), owned by {@link GpuDevice}.
 */
public final class Cublas {
  public static final int OP_N = 0;
  public static final int OP_T = 1;
  static final int DEFAULT_MATH = 0;
  static final int PEDANTIC_MATH = 2;
  /** cudaDataType_t CUDA_R_32F. */
  static final int CUDA_R_32F = 0;
  /** cublasComputeType_t: FP32 in and out, TF32 tensor cores allowed for the products. */
  static final int COMPUTE_32F_FAST_TF32 = 77;
  /** cublasGemmAlgo_t CUBLAS_GEMM_DEFAULT: cuBLAS's heuristics pick the kernel. */
  static final int GEMM_DEFAULT = -1;

  private static volatile Cublas instance;

  final String library;
  private final MethodHandle create;
  private final MethodHandle destroy;
  private final MethodHandle setStream;
  private final MethodHandle setMathMode;
  private final MethodHandle sgemm;
  private final MethodHandle gemmEx; // null when the library lacks it (then TF32 GEMMs are refused)

  private Cublas(String library, SymbolLookup lookup) {
    this.library = library;
    Linker linker = Linker.nativeLinker();
    create = linker.downcallHandle(find(lookup, "cublasCreate_v2"), FunctionDescriptor.of(JAVA_INT, ADDRESS));
    destroy = linker.downcallHandle(find(lookup, "cublasDestroy_v2"), FunctionDescriptor.of(JAVA_INT, ADDRESS));
    setStream = linker.downcallHandle(find(lookup, "cublasSetStream_v2"), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    setMathMode = linker.downcallHandle(find(lookup, "cublasSetMathMode"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    sgemm = linker.downcallHandle(find(lookup, "cublasSgemm_v2"), FunctionDescriptor.of(JAVA_INT,
        ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT,
        ADDRESS, ADDRESS, JAVA_INT));
    gemmEx = lookup.find("cublasGemmEx").map(f -> linker.downcallHandle(f, FunctionDescriptor.of(JAVA_INT,
        ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS,
        JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT))).orElse(null);
  }

  private static MemorySegment find(SymbolLookup lookup, String name) {
    return lookup.find(name).orElseThrow(() -> new IllegalStateException("cuBLAS symbol " + name + " not found"));
  }

  static Cublas get() {
    Cublas c = instance;
    if (c == null) {
      synchronized (Cublas.class) {
        if (instance == null) {
          instance = load();
        }
        c = instance;
      }
    }
    return c;
  }

  private static Cublas load() {
    List<String> candidates = new ArrayList<>();
    String env = System.getenv("GPU_VECTORS_CUBLAS");
    if (env != null && !env.isBlank()) {
      candidates.add(env);
    }
    for (String v : new String[] {"13", "12"}) {
      candidates.add("libcublas.so." + v);
      candidates.add("/usr/local/cuda/lib64/libcublas.so." + v);
    }
    List<String> errors = new ArrayList<>();
    for (String name : candidates) {
      try {
        return new Cublas(name, SymbolLookup.libraryLookup(name, Arena.global()));
      } catch (IllegalArgumentException | IllegalStateException e) {
        errors.add(name + ": " + e.getMessage());
      }
    }
    throw new IllegalStateException("no cuBLAS library found (tried " + errors + ")");
  }

  static void check(String call, int status) {
    if (status != 0) {
      throw CudaException.cublas(call, status, statusName(status));
    }
  }

  static String statusName(int s) {
    return switch (s) {
      case 1 -> "CUBLAS_STATUS_NOT_INITIALIZED";
      case 3 -> "CUBLAS_STATUS_ALLOC_FAILED";
      case 7 -> "CUBLAS_STATUS_INVALID_VALUE";
      case 8 -> "CUBLAS_STATUS_ARCH_MISMATCH";
      case 11 -> "CUBLAS_STATUS_MAPPING_ERROR";
      case 13 -> "CUBLAS_STATUS_EXECUTION_FAILED";
      case 14 -> "CUBLAS_STATUS_INTERNAL_ERROR";
      case 15 -> "CUBLAS_STATUS_NOT_SUPPORTED";
      case 16 -> "CUBLAS_STATUS_LICENSE_ERROR";
      default -> "CUBLAS_STATUS_" + s;
    };
  }

  private static int invoke(MethodHandle h, Object... args) {
    try {
      return (int) h.invokeWithArguments(args);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /**
   * A cuBLAS handle bound to one stream, FP32 math (no TF32: {@link Handle#sgemmTf32} asks for it per call).
   * Created and destroyed here; owned by a {@link GpuDevice} and used only under its lock, with the device's
   * context current.
   */
  public final class Handle implements AutoCloseable {
    private final MemorySegment handle;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment alpha;
    private final MemorySegment beta;
    private boolean closed;

    Handle(long stream) {
      MemorySegment out = arena.allocate(ADDRESS);
      check("cublasCreate_v2", invoke(create, out));
      handle = out.get(ADDRESS, 0);
      check("cublasSetStream_v2", invoke(setStream, handle, MemorySegment.ofAddress(stream)));
      check("cublasSetMathMode", invoke(setMathMode, handle, DEFAULT_MATH));
      alpha = arena.allocate(JAVA_FLOAT);
      beta = arena.allocate(JAVA_FLOAT);
    }

    /** Column-major C(m x n) = alpha * op(A) * op(B) + beta * C, all pointers device addresses. */
    public void sgemm(int transA, int transB, int m, int n, int k, float a, long aPtr, int lda, long bPtr, int ldb,
               float b, long cPtr, int ldc) {
      if (closed) {
        throw new IllegalStateException("cuBLAS handle closed");
      }
      alpha.set(JAVA_FLOAT, 0, a);
      beta.set(JAVA_FLOAT, 0, b);
      int status;
      try {
        // invokeExact, not invokeWithArguments: this runs per segment and pass (the boxing and spreading of
        // 14 arguments showed as host time per segment in a pass)
        status = (int) sgemm.invokeExact(handle, transA, transB, m, n, k, alpha, MemorySegment.ofAddress(aPtr), lda,
            MemorySegment.ofAddress(bPtr), ldb, beta, MemorySegment.ofAddress(cPtr), ldc);
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Throwable t) {
        throw new IllegalStateException(t);
      }
      check("cublasSgemm_v2", status);
    }

    /**
     * As {@link #sgemm} (FP32 matrices in and out), with the products on TF32 tensor cores: each input keeps 10 of
     * its 23 mantissa bits, the sums stay FP32 (GpuFlatIndex's TF32 candidate pass; its error bound: CandidateBound).
     *
     * <p>Through cublasGemmEx with compute type CUBLAS_COMPUTE_32F_FAST_TF32 rather than cublasSetMathMode(
     * CUBLAS_TF32_TENSOR_OP_MATH) around cublasSgemm: the precision is an argument of this one call, so the
     * handle, which every search on the device shares (the FP32 GEMM path, IVF's coarse quantizer, benchmarks),
     * never changes state: nothing to restore, and no way for TF32 to leak into an FP32 call if this one throws.
     */
    public void sgemmTf32(int transA, int transB, int m, int n, int k, float a, long aPtr, int lda, long bPtr, int ldb,
                   float b, long cPtr, int ldc) {
      if (closed) {
        throw new IllegalStateException("cuBLAS handle closed");
      }
      if (gemmEx == null) {
        throw new IllegalStateException("cublasGemmEx not found in " + library);
      }
      alpha.set(JAVA_FLOAT, 0, a);
      beta.set(JAVA_FLOAT, 0, b);
      int status;
      try {
        status = (int) gemmEx.invokeExact(handle, transA, transB, m, n, k, alpha, MemorySegment.ofAddress(aPtr),
            CUDA_R_32F, lda, MemorySegment.ofAddress(bPtr), CUDA_R_32F, ldb, beta, MemorySegment.ofAddress(cPtr),
            CUDA_R_32F, ldc, COMPUTE_32F_FAST_TF32, GEMM_DEFAULT);
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Throwable t) {
        throw new IllegalStateException(t);
      }
      check("cublasGemmEx", status);
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        try {
          check("cublasDestroy_v2", invoke(destroy, handle));
        } finally {
          arena.close();
        }
      }
    }
  }
}
