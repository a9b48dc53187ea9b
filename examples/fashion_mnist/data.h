/* Fashion-MNIST in IDX format (gzip-compressed), as Debian's dataset-fashion-mnist package installs it:
 *   /usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
 * Images are 28x28 uint8, labels 0..9. */
#ifndef ONEFLOW_EXAMPLES_FASHION_MNIST_DATA_H_
#define ONEFLOW_EXAMPLES_FASHION_MNIST_DATA_H_

#include <stddef.h>
#include <stdint.h>

typedef struct {
  size_t count;    /* number of examples */
  size_t rows, cols;
  uint8_t* images; /* count * rows * cols bytes, row-major */
  uint8_t* labels; /* count bytes */
} fm_dataset_t;

/* Loads "<dir>/<split>-images-idx3-ubyte.gz" and "<dir>/<split>-labels-idx1-ubyte.gz" (split is
 * "train" or "t10k"). Returns 0 on success; otherwise prints what is wrong (missing file, bad magic
 * number, truncated data, count mismatch) and returns -1. Free with fm_dataset_free. */
int fm_dataset_load(const char* dir, const char* split, fm_dataset_t* out);
void fm_dataset_free(fm_dataset_t* ds);

#endif /* ONEFLOW_EXAMPLES_FASHION_MNIST_DATA_H_ */
