package org.gpuvectors.plugin;

import org.elasticsearch.bootstrap.BootstrapCheck;
import org.elasticsearch.bootstrap.BootstrapContext;
import org.elasticsearch.common.ReferenceDocs;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.cuda.GpuAvailability;

import java.util.function.Supplier;

/**
 * Refuses to start a node configured with {@code gpu_vectors.gpu.mode: true} when the GPU cannot serve searches,
 * saying why: no driver, no device, a compute capability below what the kernel fatbins carry (sm_80), kernels not
 * built, or the device failing to open (which loads our kernels: a GPU the fatbins have no code for fails there). With
 * {@code auto} the node starts and searches on the CPU.
 */
final class GpuModeBootstrapCheck implements BootstrapCheck {

    private final Supplier<GpuSearchService> service;

    GpuModeBootstrapCheck(Supplier<GpuSearchService> service) {
        this.service = service;
    }

    @Override
    public BootstrapCheckResult check(BootstrapContext context) {
        if ("true".equals(GpuVectorsSettings.GPU_MODE.get(context.settings())) == false) {
            return BootstrapCheckResult.success();
        }
        GpuSearchService gpu = service.get();
        String reason;
        if (gpu != null) {
            if (gpu.gpuActive()) {
                return BootstrapCheckResult.success();
            }
            reason = gpu.unusableReason();
        } else {
            GpuAvailability availability = GpuAvailability.get();
            if (availability.available()) {
                return BootstrapCheckResult.success();
            }
            reason = availability.reason();
        }
        return BootstrapCheckResult.failure(
            "[" + GpuVectorsSettings.GPU_MODE.getKey() + "] is [true] but no GPU is usable: " + reason
                + "; set it to [auto] to search on the CPU when there is no GPU"
        );
    }

    @Override
    public boolean alwaysEnforce() {
        return true;
    }

    @Override
    public ReferenceDocs referenceDocs() {
        return ReferenceDocs.BOOTSTRAP_CHECKS;
    }
}
