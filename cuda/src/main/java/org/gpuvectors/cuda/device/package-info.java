/**
 * One CUDA device as the runtime's resources: {@link org.gpuvectors.cuda.device.GpuDevice} (context, lock, lanes,
 * memory pool, staging buffers, kernel module) and its pass slots ({@link org.gpuvectors.cuda.device.PassSlot}).
 * What the packages above keep per device hangs on it as {@link org.gpuvectors.cuda.device.GpuDevice.Attachment}s,
 * which it closes without knowing them: the device knows no selection, pass or index.
 */
package org.gpuvectors.cuda.device;
