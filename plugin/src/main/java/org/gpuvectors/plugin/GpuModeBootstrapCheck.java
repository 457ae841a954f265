package org.gpuvectors.plugin;

import org.elasticsearch.bootstrap.BootstrapCheck;
import org.elasticsearch.bootstrap.BootstrapContext;
import org.elasticsearch.common.ReferenceDocs;
import org.gpuvectors.cuda.GpuAvailability;

/**
 * Refuses to start a node configured with {@code gpu_vectors.gpu.mode: true} when no GPU is usable, saying why
 * (no driver, no device, compute capability too old, kernels not built). With {@code auto} the node starts and
 * searches on the CPU.
 */
final class GpuModeBootstrapCheck implements BootstrapCheck {

    @Override
    public BootstrapCheckResult check(BootstrapContext context) {
        if ("true".equals(GpuVectorsSettings.GPU_MODE.get(context.settings())) == false) {
            return BootstrapCheckResult.success();
        }
        GpuAvailability availability = GpuAvailability.get();
        if (availability.available()) {
            return BootstrapCheckResult.success();
        }
        return BootstrapCheckResult.failure(
            "[" + GpuVectorsSettings.GPU_MODE.getKey() + "] is [true] but no GPU is usable: " + availability.reason()
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
