/**
 * The IVF index types, {@code ivf_flat} and {@code ivf_pq}: their build ({@link org.gpuvectors.codec.ivf.IvfBuilder},
 * {@link org.gpuvectors.codec.ivf.IvfPqBuilder}), their on-disk part and their CPU search.
 *
 * <p>Each on-disk part is a pair with matching names: the structure as built writes it ({@code *Layout#writeTo}), the
 * structure as read from the file reads it back and searches it ({@code *Field#read}).
 *
 * <ul>
 *   <li>{@code ivf_flat}: {@link org.gpuvectors.codec.ivf.IvfLayout} / {@link org.gpuvectors.codec.ivf.IvfField}
 *   <li>{@code ivf_pq}: {@link org.gpuvectors.codec.ivf.IvfPqLayout} / {@link org.gpuvectors.codec.ivf.IvfPqField}
 *       (the lists as {@code ivf_flat}'s pair writes and reads them, then the quantizer, which {@link
 *       org.gpuvectors.codec.ivf.ProductQuantizer} both writes and reads, and the codes)
 * </ul>
 *
 * <p>The byte layout is documented in {@code GpuVectorsFormat}.
 */
package org.gpuvectors.codec.ivf;
