/**
 * The flat (exact) index on the device: {@link org.gpuvectors.cuda.flat.GpuFlatIndex}, its FP16 copy, its scan
 * table of a pass's small groups, and the mirrors of its kernels' parameter structs.
 */
package org.gpuvectors.cuda.flat;
