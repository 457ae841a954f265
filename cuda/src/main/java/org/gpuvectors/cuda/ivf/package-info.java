/**
 * The IVF indexes on the device: {@link org.gpuvectors.cuda.ivf.GpuIvfFlatIndex} and {@link
 * org.gpuvectors.cuda.ivf.GpuIvfPqIndex}, their coarse step (a flat index of the centroids), list scans, shared key
 * selection of a pass's small IVF-PQ groups, and the mirrors of their kernels' parameter structs.
 */
package org.gpuvectors.cuda.ivf;
