/**
 * A Lucene vectors format and codec for GPU-searchable vector fields.
 *
 * <ul>
 *   <li>{@link org.gpuvectors.codec.GpuVectorsFormat}: the per-field format (raw vectors in
 *       Lucene's flat format plus a per-field index structure, see {@link
 *       org.gpuvectors.codec.IndexType}); its Javadoc documents the file layout.
 *   <li>{@link org.gpuvectors.codec.GpuVectorsRoutingFormat}: routes fields tagged with {@link
 *       org.gpuvectors.codec.GpuVectorsFormat#INDEX_TYPE_ATTRIBUTE} to that format, others to a
 *       fallback.
 *   <li>{@link org.gpuvectors.codec.GpuVectorsCodec}: the SPI codec for plain Lucene, and {@link
 *       org.gpuvectors.codec.GpuVectorsCodec#wrap} for wrapping another codec (Elasticsearch's).
 * </ul>
 */
package org.gpuvectors.codec;
