/**
 * bfloat16 vector storage: {@link org.gpuvectors.codec.bf16.BFloat16FlatVectorsFormat}, a Lucene flat
 * vectors format that keeps {@code FLOAT32} fields at two bytes a dimension and reads them back as
 * floats, and {@link org.gpuvectors.codec.bf16.BFloat16}, the float/bfloat16 conversion it rounds with.
 *
 * <p>Depends on Lucene only: the GPU vectors format decides which fields are stored this way.
 */
package org.gpuvectors.codec.bf16;
