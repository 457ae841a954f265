package org.gpuvectors.codec.gpu;

/**
 * What a segment field holds besides its raw vectors, as the GPU service uploads it: IVF lists
 * ({@link GpuIvf}) or a graph ({@link GpuGraph}); null stands for a flat field.
 */
public sealed interface GpuStructure permits GpuIvf, GpuGraph {}
