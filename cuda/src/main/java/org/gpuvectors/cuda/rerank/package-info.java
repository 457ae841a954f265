/**
 * The exact re-rank of candidates in FP32 ({@link org.gpuvectors.cuda.rerank.ExactRerank}) and the certificate that
 * tells when approximate candidates already hold the exact k best ({@link org.gpuvectors.cuda.rerank.CandidateBound}).
 * Knows no index or pass.
 */
package org.gpuvectors.cuda.rerank;
