/**
 * The CUDA runtime under everything else of the GPU module: the driver (JCuda, errors as {@link
 * org.gpuvectors.cuda.runtime.CudaException}), the kernel images and their module, device buffers and their pool,
 * pinned host buffers, streams ({@link org.gpuvectors.cuda.runtime.Lane}) and cuBLAS through {@code java.lang.foreign}.
 * It knows no index, search or pass: the packages above it do.
 */
package org.gpuvectors.cuda.runtime;
