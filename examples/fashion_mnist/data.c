#include "data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

/* Reads exactly n bytes; -1 on a short read (truncated or corrupt file). */
static int read_exact(gzFile f, void* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    unsigned chunk = (unsigned)((n - done) > (1u << 30) ? (1u << 30) : (n - done));
    int got = gzread(f, (char*)buf + done, chunk);
    if (got <= 0) return -1;
    done += (size_t)got;
  }
  return 0;
}

static uint32_t big_endian_u32(const uint8_t b[4]) {
  return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | (uint32_t)b[3];
}

/* One IDX file: magic 0x00000800 | ndim, then ndim big-endian sizes, then uint8 data. */
static int load_idx(const char* path, uint32_t want_ndim, uint32_t dims[3], uint8_t** out_data) {
  gzFile f = gzopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s (install Debian's dataset-fashion-mnist, or pass --data DIR)\n", path);
    return -1;
  }
  uint8_t header[4];
  int rc = -1;
  uint8_t* data = NULL;
  if (read_exact(f, header, 4) != 0 || big_endian_u32(header) != (0x800u | want_ndim)) {
    fprintf(stderr, "%s: not an IDX file of %u-d uint8 data\n", path, want_ndim);
    goto done;
  }
  size_t total = 1;
  for (uint32_t i = 0; i < want_ndim; ++i) {
    if (read_exact(f, header, 4) != 0) {
      fprintf(stderr, "%s: truncated header\n", path);
      goto done;
    }
    dims[i] = big_endian_u32(header);
    total *= dims[i];
  }
  data = malloc(total ? total : 1);
  if (data == NULL) {
    fprintf(stderr, "%s: out of memory for %zu bytes\n", path, total);
    goto done;
  }
  if (read_exact(f, data, total) != 0) {
    fprintf(stderr, "%s: truncated data (expected %zu bytes)\n", path, total);
    goto done;
  }
  *out_data = data;
  data = NULL;
  rc = 0;
done:
  free(data);
  gzclose(f);
  return rc;
}

int fm_dataset_load(const char* dir, const char* split, fm_dataset_t* out) {
  char path[4096];
  uint32_t idims[3] = {0, 0, 0}, ldims[3] = {0, 0, 0};
  uint8_t *images = NULL, *labels = NULL;
  snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, split);
  if (load_idx(path, 3, idims, &images) != 0) return -1;
  snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, split);
  if (load_idx(path, 1, ldims, &labels) != 0) {
    free(images);
    return -1;
  }
  if (idims[0] != ldims[0]) {
    fprintf(stderr, "%s/%s: %u images but %u labels\n", dir, split, idims[0], ldims[0]);
    free(images);
    free(labels);
    return -1;
  }
  for (uint32_t i = 0; i < ldims[0]; ++i) {
    if (labels[i] > 9) {
      fprintf(stderr, "%s: label %u of example %u is out of range 0..9\n", path, labels[i], i);
      free(images);
      free(labels);
      return -1;
    }
  }
  out->count = idims[0];
  out->rows = idims[1];
  out->cols = idims[2];
  out->images = images;
  out->labels = labels;
  return 0;
}

void fm_dataset_free(fm_dataset_t* ds) {
  if (ds == NULL) return;
  free(ds->images);
  free(ds->labels);
  memset(ds, 0, sizeof *ds);
}
