/* Planted tiled kernels (issue #17, item 7): three rewrites of the kind a
   kernel engineer deploys, each correct on every small shape and, built
   with PLANTED_FAULTS=1, wrong only at scale, where a real tiling bug
   lives. With PLANTED_FAULTS=0 the same code, the bug fixed, must hold.
   Default `moacert certify OP --plugin LIB#NAME` must catch each faulty
   one (tests/planted/CMakeLists.txt, docs/plugins.md#planted-tiled-kernels).

     tiled_fwd     attention.fwd, online softmax over key tiles of 256;
                   the fault counts the tiles with a floor, so it drops the
                   partial last tile once a row sees more than 256 keys (a
                   row with fewer is one partial tile and stays right).
     split_decode  attention.decode, split-K over the cache in splits of
                   512 keys, merged by their log-sum-exps; the fault skips
                   the rescale of each split's accumulator, exact for one
                   split and wrong past the first.
     buffered_fwd  attention.fwd staging a row's scores in a scratch of
                   1024 positions; the fault fills it once and silently
                   drops the keys past it, the fix goes round it again.

   Only the structure is planted: every sum runs in double, so that the
   fixed kernels' error is their final rounding to f32 and any failure is
   the planted fault's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <moacert/plugin.h>
#include <moacert/plugin_params.h>

#ifndef PLANTED_FAULTS
#error "build with -DPLANTED_FAULTS=0 (the fixed kernels) or 1 (the planted faults)"
#endif

/* Tiles and splits of the three kernels (the sizes real ones use). */
enum { KEY_TILE = 256, SPLIT_KEYS = 512, SCRATCH_KEYS = 1024 };

/* Element (a, b, c[, d]) of a strided f32 tensor: strides are in elements. */
#define AT3(t, a, b, c) \
  (((float*)(t)->data)[(a) * (t)->strides[0] + (b) * (t)->strides[1] + (c) * (t)->strides[2]])
#define AT4(t, a, b, c, d)                                                                     \
  (((float*)(t)->data)[(a) * (t)->strides[0] + (b) * (t)->strides[1] + (c) * (t)->strides[2] + \
                       (d) * (t)->strides[3]])

/* One query row of attention, read through its strides: q row (b, h, i),
   keys and values of kv head g. */
typedef struct {
  const DLTensor *q, *k, *v;
  int64_t b, h, i, g, D;
  double scale;
} attention_row;

static double score(const attention_row* r, int64_t j) {
  double dot = 0;
  for (int64_t d = 0; d < r->D; ++d)
    dot += (double)AT4(r->q, r->b, r->h, r->i, d) * (double)AT4(r->k, r->b, r->g, j, d);
  return r->scale * dot;
}

/* The running softmax state of a row: max, sum of exp(s - max) and the
   weighted sum of values, each scaled to the current max. */
typedef struct {
  double max, sum;
  double* acc; /* (D) */
} online_softmax;

static void softmax_start(online_softmax* s, int64_t D) {
  s->max = -INFINITY;
  s->sum = 0;
  for (int64_t d = 0; d < D; ++d) s->acc[d] = 0;
}

/* Folds keys [j0, j1) of the row into the state, their scores in
   scores[0 .. j1 - j0). */
static void softmax_fold(online_softmax* s, const attention_row* r, const double* scores,
                         int64_t j0, int64_t j1) {
  double tile_max = -INFINITY;
  for (int64_t j = j0; j < j1; ++j) tile_max = fmax(tile_max, scores[j - j0]);
  const double new_max = fmax(s->max, tile_max);
  const double rescale = exp(s->max - new_max); /* 0 for the first tile (max -inf) */
  s->sum *= rescale;
  for (int64_t d = 0; d < r->D; ++d) s->acc[d] *= rescale;
  for (int64_t j = j0; j < j1; ++j) {
    const double p = exp(scores[j - j0] - new_max);
    s->sum += p;
    for (int64_t d = 0; d < r->D; ++d) s->acc[d] += p * (double)AT4(r->v, r->b, r->g, j, d);
  }
  s->max = new_max;
}

/* o = acc / sum, lse = max + log(sum); a row that sees no key: o = 0, lse = -inf. */
static void softmax_write(const online_softmax* s, DLTensor* o, DLTensor* lse, int64_t b, int64_t h,
                          int64_t i, int64_t D) {
  if (s->sum == 0) { /* a row that sees no key */
    for (int64_t d = 0; d < D; ++d) AT4(o, b, h, i, d) = 0;
    AT3(lse, b, h, i) = (float)-INFINITY;
    return;
  }
  for (int64_t d = 0; d < D; ++d) AT4(o, b, h, i, d) = (float)(s->acc[d] / s->sum);
  AT3(lse, b, h, i) = (float)(s->max + log(s->sum));
}

/* The keys row i of N sees among M: all, or causally j <= i + (M - N). */
static int64_t visible_keys(int causal, int64_t i, int64_t N, int64_t M) {
  if (!causal) return M;
  const int64_t m = i + (M - N) + 1;
  return m < 0 ? 0 : m > M ? M : m;
}

/* How the two attention.fwd kernels sweep the keys a row sees. */
typedef enum { SWEEP_TILED, SWEEP_BUFFERED } sweep;

static void sweep_row(sweep how, online_softmax* s, const attention_row* r, int64_t visible,
                      double* scores /* (SCRATCH_KEYS) */) {
  if (how == SWEEP_TILED) {
#if PLANTED_FAULTS
    /* Planted: the floor drops the partial last tile past the first tile. */
    const int64_t tiles = visible <= KEY_TILE ? 1 : visible / KEY_TILE;
#else
    const int64_t tiles = (visible + KEY_TILE - 1) / KEY_TILE;
#endif
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t j0 = t * KEY_TILE;
      const int64_t j1 = j0 + KEY_TILE < visible ? j0 + KEY_TILE : visible; /* tail tile */
      for (int64_t j = j0; j < j1; ++j) scores[j - j0] = score(r, j);
      softmax_fold(s, r, scores, j0, j1);
    }
    return;
  }
  /* SWEEP_BUFFERED: fill the scratch, fold it, and go round again. */
  for (int64_t j0 = 0; j0 < visible; j0 += SCRATCH_KEYS) {
    const int64_t j1 = j0 + SCRATCH_KEYS < visible ? j0 + SCRATCH_KEYS : visible;
    for (int64_t j = j0; j < j1; ++j) scores[j - j0] = score(r, j);
    softmax_fold(s, r, scores, j0, j1);
#if PLANTED_FAULTS
    break; /* Planted: the keys past the scratch are silently dropped. */
#endif
  }
}

static int attention_fwd(sweep how, const DLTensor* const* in, int n_in, DLTensor* const* out,
                         int n_out, const char* params, char* err, size_t err_len) {
  if (n_in != 3 || n_out != 2) {
    snprintf(err, err_len, "attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  const DLTensor *q = in[0], *k = in[1], *v = in[2];
  DLTensor *o = out[0], *lse = out[1];
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2];
  const double scale = moacert_param(params, "scale", 1 / sqrt((double)D));
  const int causal = moacert_flag(params, "causal");
  double* scores = malloc(sizeof(double) * SCRATCH_KEYS); /* (SCRATCH_KEYS) */
  online_softmax s = {0, 0, malloc(sizeof(double) * (size_t)D)};
  if (!scores || !s.acc) {
    free(scores);
    free(s.acc);
    snprintf(err, err_len, "attention.fwd: out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        const attention_row r = {q, k, v, b, h, i, h / (H / Hkv), D, scale};
        softmax_start(&s, D);
        const int64_t visible = visible_keys(causal, i, N, M);
        if (visible > 0) sweep_row(how, &s, &r, visible, scores); /* else no key: o = 0 */
        softmax_write(&s, o, lse, b, h, i, D);
      }
  free(scores);
  free(s.acc);
  return 0;
}

static int tiled_fwd(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                     const char* params, char* err, size_t err_len) {
  return attention_fwd(SWEEP_TILED, in, n_in, out, n_out, params, err, err_len);
}

static int buffered_fwd(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                        const char* params, char* err, size_t err_len) {
  return attention_fwd(SWEEP_BUFFERED, in, n_in, out, n_out, params, err, err_len);
}

/* attention.decode, split-K (flash-decoding): each split of SPLIT_KEYS
   cached keys is reduced on its own to (max, sum, acc), then the splits
   are merged, each rescaled by exp(its max - the overall max). */
static int split_decode(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                        const char* params, char* err, size_t err_len) {
  if (n_in != 4 || n_out != 2) {
    snprintf(err, err_len, "attention.decode: expected 4 inputs and 2 outputs");
    return 1;
  }
  const DLTensor *q = in[0], *k = in[1], *v = in[2], *lens = in[3];
  DLTensor *o = out[0], *lse = out[1];
  const int64_t B = q->shape[0], H = q->shape[1], D = q->shape[3];
  const int64_t Hkv = k->shape[1], L = k->shape[2];
  const double scale = moacert_param(params, "scale", 1 / sqrt((double)D));
  const int64_t max_splits = (L + SPLIT_KEYS - 1) / SPLIT_KEYS;
  double* scores = malloc(sizeof(double) * SPLIT_KEYS);                  /* (SPLIT) */
  double* split_max = malloc(sizeof(double) * (size_t)max_splits);       /* (splits) */
  double* split_sum = malloc(sizeof(double) * (size_t)max_splits);       /* (splits) */
  double* split_acc = malloc(sizeof(double) * (size_t)(max_splits * D)); /* (splits, D) */
  double* merged = malloc(sizeof(double) * (size_t)D);                   /* (D) */
  if (!scores || !split_max || !split_sum || !split_acc || !merged) {
    free(scores);
    free(split_max);
    free(split_sum);
    free(split_acc);
    free(merged);
    snprintf(err, err_len, "attention.decode: out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = ((const int64_t*)lens->data)[b * lens->strides[0]];
    const int64_t splits = (len + SPLIT_KEYS - 1) / SPLIT_KEYS;
    for (int64_t h = 0; h < H; ++h) {
      const attention_row r = {q, k, v, b, h, 0, h / (H / Hkv), D, scale};
      /* Each split on its own. */
      for (int64_t sp = 0; sp < splits; ++sp) {
        const int64_t j0 = sp * SPLIT_KEYS;
        const int64_t j1 = j0 + SPLIT_KEYS < len ? j0 + SPLIT_KEYS : len; /* tail split */
        online_softmax part = {-INFINITY, 0, split_acc + sp * D};
        softmax_start(&part, D);
        for (int64_t j = j0; j < j1; ++j) scores[j - j0] = score(&r, j);
        softmax_fold(&part, &r, scores, j0, j1);
        split_max[sp] = part.max;
        split_sum[sp] = part.sum;
      }
      /* Merge: rescale each split to the overall max. */
      double max = -INFINITY, sum = 0;
      for (int64_t sp = 0; sp < splits; ++sp) max = fmax(max, split_max[sp]);
      for (int64_t d = 0; d < D; ++d) merged[d] = 0;
      for (int64_t sp = 0; sp < splits; ++sp) {
        const double rescale = exp(split_max[sp] - max);
        sum += split_sum[sp] * rescale;
#if PLANTED_FAULTS
        /* Planted: the accumulators are summed without their rescale
           (exact for one split, whose rescale is 1). */
        for (int64_t d = 0; d < D; ++d) merged[d] += split_acc[sp * D + d];
#else
        for (int64_t d = 0; d < D; ++d) merged[d] += split_acc[sp * D + d] * rescale;
#endif
      }
      const online_softmax whole = {max, sum, merged};
      softmax_write(&whole, o, lse, b, h, 0, D);
    }
  }
  free(scores);
  free(split_max);
  free(split_sum);
  free(split_acc);
  free(merged);
  return 0;
}

static const moacert_kernel kernels[] = {
    /* op                 name            dtype  accepts_strided  run */
    {"attention.fwd", "tiled_fwd", "f32", 1, tiled_fwd},
    {"attention.fwd", "buffered_fwd", "f32", 1, buffered_fwd},
    {"attention.decode", "split_decode", "f32", 1, split_decode},
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
