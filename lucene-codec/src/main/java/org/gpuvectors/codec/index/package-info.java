/**
 * What the index types ({@code ivf}, {@code graph}) share with the format and with the GPU glue: the interface of an
 * approximate index ({@link org.gpuvectors.codec.index.ApproximateIndex}), the timing of build phases and reading
 * vector rows. It depends on no other package of the codec, so that the codec's packages form no cycle: the format
 * ({@code org.gpuvectors.codec}) uses {@code gpu}, {@code graph} and {@code ivf}, which use this package.
 */
package org.gpuvectors.codec.index;
