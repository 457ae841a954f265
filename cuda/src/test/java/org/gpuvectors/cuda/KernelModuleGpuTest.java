package org.gpuvectors.cuda;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.CudaException;
import org.gpuvectors.cuda.runtime.KernelImages;
import org.gpuvectors.cuda.runtime.KernelModule;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kernels as one module per compile unit on a GPU: the device loads every unit the index lists, a kernel
 * of each unit is found by name, an unknown name fails naming the units searched, and the GpuConfig.kernelFile
 * override loads that one file alone.
 */
class KernelModuleGpuTest extends GpuTestCase {
  /** One kernel of each src/main/cuda/*.cu (the units are found by these names, not by file). */
  private static final List<String> ONE_KERNEL_PER_UNIT = List.of("gv_fused_search_k32", "gv_graph_search",
      "gv_graph_prune", "gv_ivf_group_count", "gv_ivf_flat_scan_k32", "gv_ivf_pq_scan_k32", "gv_ivf_pq_code_terms",
      "gv_rerank_exact", "gv_warp_select_k32", "gv_flat_scan_a_k32", "gv_codebook_assign_shared",
      "gv_half_scan_k64", "gv_element_scan_byte_k32");

  @Test
  void everyUnitLoadedAndItsKernelsFound() {
    try (GpuDevice.Scope s = device.lock()) {
      KernelModule module = device.module();
      assertEquals(KernelImages.units(), module.unitNames());
      assertEquals(ONE_KERNEL_PER_UNIT.size(), module.unitNames().size(), "a kernel named here per unit");
      for (String name : ONE_KERNEL_PER_UNIT) {
        assertNotNull(module.function(name), name);
        assertTrue(module.maxBlocksPerSm(name, 64) > 0, name + " launches");
      }
      CudaException e = assertThrows(CudaException.class, () -> module.function("gv_no_such_kernel"));
      assertTrue(e.getMessage().contains("gv_no_such_kernel") && e.getMessage().contains("select_kernels.fatbin")
          && e.getMessage().contains("CUDA_ERROR_NOT_FOUND"), e.getMessage());
    }
  }

  @Test
  void overrideLoadsThatFileAlone(@TempDir Path dir) throws IOException {
    Path fatbin = dir.resolve("select-only.fatbin");
    try (InputStream in = KernelImages.class.getResourceAsStream(KernelImages.FOLDER + "select_kernels.fatbin")) {
      Files.write(fatbin, in.readAllBytes());
    }
    try (GpuDevice.Scope s = device.lock(); KernelModule module = new KernelModule(fatbin)) {
      assertEquals(List.of(fatbin.toString()), module.unitNames());
      assertNotNull(module.function("gv_block_select_k2048"));
      CudaException e = assertThrows(CudaException.class, () -> module.function("gv_fused_search_k32"));
      assertTrue(e.getMessage().contains("CUDA_ERROR_NOT_FOUND"), e.getMessage());
    }
  }
}
