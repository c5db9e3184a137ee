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

/* ---- Planted at the deployment envelope (issue #29, item 6) ----
   Five more, each right on every case below a threshold of its op's
   envelope (docs/design.md#deployment-envelope) and, planted, wrong past
   it: a fixed buffer or a narrow index, the faults that wait for the
   shapes models are deployed at.

     tile_count_fwd  attention.fwd over query tiles of 64 rows, the last
                     tile's index kept in 8 bits: past 256 tiles
                     (N = 16384) it wraps and the rows of the tiles past
                     the wrapped index are never written.
     split64_decode  attention.decode, split-K in splits of 1024 keys into
                     a partials buffer of 64 splits; the fix merges the
                     buffer into a running state each time it is full, the
                     fault indexes and counts it modulo 64 and merges
                     once, so past L = 65536 the splits before the last
                     wrap are lost.
     group8_fwd      attention.fwd walking each kv head's query heads by an
                     index within the group kept in 3 bits: past 8 query
                     heads per kv head (GQA groups of 9 to 16) it wraps.
     width_rmsnorm   rmsnorm summing the squares in chunks of 4096 lanes,
                     at most 3 of them, sized for widths up to 12288: wider
                     rows lose the rest of their sum.
     key_tile_bwd    attention.bwd over key tiles of 1024, the tile count
                     capped at 16: the keys past 16384 are dropped. */
enum {
  QUERY_TILE = 64,      /* tile_count_fwd */
  DECODE_SPLIT = 1024,  /* split64_decode: keys per split */
  PARTIALS = 64,        /* split64_decode: splits in the partials buffer */
  GROUP_INDEX_BITS = 3, /* group8_fwd: 8 query heads per kv head */
  WIDTH_CHUNK = 4096,   /* width_rmsnorm */
  WIDTH_CHUNKS = 3,     /* width_rmsnorm: 12288 lanes */
  BWD_KEY_TILE = 1024,  /* key_tile_bwd */
  BWD_KEY_TILES = 16    /* key_tile_bwd: 16384 keys */
};

/* Every key row i sees, folded right: the correct sweep the envelope
   kernels share (their faults lie elsewhere). */
static void sweep_all(online_softmax* s, const attention_row* r, int64_t visible,
                      double* scores /* (SCRATCH_KEYS) */) {
  for (int64_t j0 = 0; j0 < visible; j0 += SCRATCH_KEYS) {
    const int64_t j1 = j0 + SCRATCH_KEYS < visible ? j0 + SCRATCH_KEYS : visible;
    for (int64_t j = j0; j < j1; ++j) scores[j - j0] = score(r, j);
    softmax_fold(s, r, scores, j0, j1);
  }
}

/* The forward of one row (b, h, i) against kv head g. */
static void forward_row(const attention_row* r, online_softmax* s, double* scores, DLTensor* o,
                        DLTensor* lse, int causal, int64_t N, int64_t M) {
  softmax_start(s, r->D);
  const int64_t visible = visible_keys(causal, r->i, N, M);
  if (visible > 0) sweep_all(s, r, visible, scores);
  softmax_write(s, o, lse, r->b, r->h, r->i, r->D);
}

typedef enum { ROWS_BY_QUERY_TILE, HEADS_BY_GROUP_INDEX } forward_walk;

static int walked_fwd(forward_walk walk, const DLTensor* const* in, int n_in, DLTensor* const* out,
                      int n_out, const char* params, char* err, size_t err_len) {
  if (n_in != 3 || n_out != 2) {
    snprintf(err, err_len, "attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  const DLTensor *q = in[0], *k = in[1], *v = in[2];
  DLTensor *o = out[0], *lse = out[1];
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2], group = H / Hkv;
  const double scale = moacert_param(params, "scale", 1 / sqrt((double)D));
  const int causal = moacert_flag(params, "causal");
  double* scores = malloc(sizeof(double) * SCRATCH_KEYS);
  online_softmax s = {0, 0, malloc(sizeof(double) * (size_t)D)};
  if (!scores || !s.acc) {
    free(scores);
    free(s.acc);
    snprintf(err, err_len, "attention.fwd: out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < Hkv; ++g)
      for (int64_t within = 0; within < group; ++within) {
        int64_t h = g * group + within;
        if (walk == HEADS_BY_GROUP_INDEX) {
#if PLANTED_FAULTS
          /* Planted: the index within the group is kept in 3 bits. */
          h = g * group + (within & ((1 << GROUP_INDEX_BITS) - 1));
#endif
          for (int64_t i = 0; i < N; ++i) {
            const attention_row r = {q, k, v, b, h, i, g, D, scale};
            forward_row(&r, &s, scores, o, lse, causal, N, M);
          }
          continue;
        }
        /* ROWS_BY_QUERY_TILE: tiles 0 .. last of 64 rows. */
#if PLANTED_FAULTS
        /* Planted: the last tile's index is kept in 8 bits. */
        const uint8_t last = (uint8_t)((N - 1) / QUERY_TILE);
#else
        const int64_t last = (N - 1) / QUERY_TILE;
#endif
        for (int64_t t = 0; t <= (int64_t)last; ++t)
          for (int64_t i = t * QUERY_TILE; i < N && i < (t + 1) * QUERY_TILE; ++i) {
            const attention_row r = {q, k, v, b, h, i, g, D, scale};
            forward_row(&r, &s, scores, o, lse, causal, N, M);
          }
      }
  free(scores);
  free(s.acc);
  return 0;
}

static int tile_count_fwd(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                          const char* params, char* err, size_t err_len) {
  return walked_fwd(ROWS_BY_QUERY_TILE, in, n_in, out, n_out, params, err, err_len);
}

static int group8_fwd(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  return walked_fwd(HEADS_BY_GROUP_INDEX, in, n_in, out, n_out, params, err, err_len);
}

/* Folds one split's state (max, sum, acc) into the running one. */
static void merge_split(online_softmax* run, double max, double sum, const double* acc, int64_t D) {
  const double new_max = fmax(run->max, max);
  if (new_max == -INFINITY) return;
  const double keep = exp(run->max - new_max), add = exp(max - new_max);
  run->sum = run->sum * keep + sum * add;
  for (int64_t d = 0; d < D; ++d) run->acc[d] = run->acc[d] * keep + acc[d] * add;
  run->max = new_max;
}

/* attention.decode, split-K into a partials buffer of PARTIALS splits,
   merged into the row's running state each time it is full. */
static int split64_decode(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                          const char* params, char* err, size_t err_len) {
  if (n_in != 4 || n_out != 2) {
    snprintf(err, err_len, "attention.decode: expected 4 inputs and 2 outputs");
    return 1;
  }
  const DLTensor *q = in[0], *k = in[1], *v = in[2], *lens = in[3];
  DLTensor *o = out[0], *lse = out[1];
  const int64_t B = q->shape[0], H = q->shape[1], D = q->shape[3], Hkv = k->shape[1];
  const double scale = moacert_param(params, "scale", 1 / sqrt((double)D));
  double* scores = malloc(sizeof(double) * DECODE_SPLIT);
  double* partial_acc = malloc(sizeof(double) * (size_t)(PARTIALS * D)); /* (PARTIALS, D) */
  double* running = malloc(sizeof(double) * (size_t)D);
  double partial_max[PARTIALS], partial_sum[PARTIALS];
  if (!scores || !partial_acc || !running) {
    free(scores);
    free(partial_acc);
    free(running);
    snprintf(err, err_len, "attention.decode: out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = ((const int64_t*)lens->data)[b * lens->strides[0]];
    const int64_t splits = (len + DECODE_SPLIT - 1) / DECODE_SPLIT;
    for (int64_t h = 0; h < H; ++h) {
      const attention_row r = {q, k, v, b, h, 0, h / (H / Hkv), D, scale};
      online_softmax run = {-INFINITY, 0, running};
      softmax_start(&run, D);
      int filled = 0;
      for (int64_t sp = 0; sp < splits; ++sp) {
#if PLANTED_FAULTS
        /* Planted: the buffer is indexed, and its slots counted, modulo
           its size and merged once: past 64 splits the count wraps and
           the splits overwritten or not counted are lost. */
        const int slot = (int)(sp % PARTIALS);
        filled = (int)(sp % PARTIALS) + 1;
#else
        const int slot = filled++;
#endif
        const int64_t j0 = sp * DECODE_SPLIT;
        const int64_t j1 = j0 + DECODE_SPLIT < len ? j0 + DECODE_SPLIT : len; /* tail split */
        online_softmax part = {-INFINITY, 0, partial_acc + slot * D};
        softmax_start(&part, D);
        for (int64_t j = j0; j < j1; ++j) scores[j - j0] = score(&r, j);
        softmax_fold(&part, &r, scores, j0, j1);
        partial_max[slot] = part.max;
        partial_sum[slot] = part.sum;
#if !PLANTED_FAULTS
        if (filled == PARTIALS || sp == splits - 1) { /* full, or the last: merge */
          for (int p = 0; p < filled; ++p)
            merge_split(&run, partial_max[p], partial_sum[p], partial_acc + p * D, D);
          filled = 0;
        }
#endif
      }
#if PLANTED_FAULTS
      for (int p = 0; p < filled; ++p)
        merge_split(&run, partial_max[p], partial_sum[p], partial_acc + p * D, D);
#endif
      softmax_write(&run, o, lse, b, h, 0, D);
    }
  }
  free(scores);
  free(partial_acc);
  free(running);
  return 0;
}

#define AT2(t, a, b) (((float*)(t)->data)[(a) * (t)->strides[0] + (b) * (t)->strides[1]])
#define AT1(t, a) (((float*)(t)->data)[(a) * (t)->strides[0]])

/* rmsnorm: y = x / sqrt(mean(x^2) + eps) * w, the squares summed by
   chunks of WIDTH_CHUNK lanes. */
static int width_rmsnorm(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                         const char* params, char* err, size_t err_len) {
  if (n_in != 2 || n_out != 1) {
    snprintf(err, err_len, "rmsnorm: expected 2 inputs and 1 output");
    return 1;
  }
  const DLTensor *x = in[0], *w = in[1];
  DLTensor* y = out[0];
  const int64_t T = x->shape[0], D = x->shape[1];
  const double eps = moacert_param(params, "eps", 1e-6);
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0;
    for (int64_t c = 0; c * WIDTH_CHUNK < D; ++c) {
#if PLANTED_FAULTS
      if (c == WIDTH_CHUNKS) break; /* Planted: sized for widths up to 12288. */
#endif
      for (int64_t e = c * WIDTH_CHUNK; e < D && e < (c + 1) * WIDTH_CHUNK; ++e)
        sum += (double)AT2(x, t, e) * (double)AT2(x, t, e);
    }
    const double inv_rms = 1 / sqrt(sum / (double)D + eps);
    for (int64_t e = 0; e < D; ++e)
      AT2(y, t, e) = (float)((double)AT2(x, t, e) * inv_rms * (double)AT1(w, e));
  }
  return 0;
}

/* attention.bwd over key tiles of BWD_KEY_TILE: with P = exp(s - lse) and
   delta_i = do_i . o_i, dS = P (do_i . v_j - delta_i); dq_i = scale sum_j
   dS k_j, dk_j = scale sum_i dS q_i, dv_j = sum_i P do_i (over the query
   heads of kv head g), accumulated in double. */
static int key_tile_bwd(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                        const char* params, char* err, size_t err_len) {
  if (n_in != 6 || n_out != 3) {
    snprintf(err, err_len, "attention.bwd: expected 6 inputs and 3 outputs");
    return 1;
  }
  const DLTensor *q = in[0], *k = in[1], *v = in[2], *o = in[3], *lse = in[4], *dout = in[5];
  DLTensor *dq = out[0], *dk = out[1], *dv = out[2];
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2], group = H / Hkv;
  const double scale = moacert_param(params, "scale", 1 / sqrt((double)D));
  const int causal = moacert_flag(params, "causal");
  double* dq_row = malloc(sizeof(double) * (size_t)D);
  double* dk_acc = malloc(sizeof(double) * (size_t)(M * D)); /* (M, D) of one kv head */
  double* dv_acc = malloc(sizeof(double) * (size_t)(M * D));
  if (!dq_row || !dk_acc || !dv_acc) {
    free(dq_row);
    free(dk_acc);
    free(dv_acc);
    snprintf(err, err_len, "attention.bwd: out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < Hkv; ++g) {
      for (int64_t e = 0; e < M * D; ++e) dk_acc[e] = dv_acc[e] = 0;
      for (int64_t h = g * group; h < (g + 1) * group; ++h)
        for (int64_t i = 0; i < N; ++i) {
          const attention_row r = {q, k, v, b, h, i, g, D, scale};
          const double row_lse = (double)AT3(lse, b, h, i);
          double delta = 0;
          for (int64_t d = 0; d < D; ++d)
            delta += (double)AT4(dout, b, h, i, d) * (double)AT4(o, b, h, i, d);
          for (int64_t d = 0; d < D; ++d) dq_row[d] = 0;
          const int64_t visible = visible_keys(causal, i, N, M);
          int64_t tiles = (visible + BWD_KEY_TILE - 1) / BWD_KEY_TILE;
#if PLANTED_FAULTS
          if (tiles > BWD_KEY_TILES) tiles = BWD_KEY_TILES; /* Planted: 16384 keys at most. */
#endif
          for (int64_t t = 0; t < tiles; ++t)
            for (int64_t j = t * BWD_KEY_TILE; j < visible && j < (t + 1) * BWD_KEY_TILE; ++j) {
              const double p = exp(score(&r, j) - row_lse);
              double dp = 0;
              for (int64_t d = 0; d < D; ++d)
                dp += (double)AT4(dout, b, h, i, d) * (double)AT4(v, b, g, j, d);
              const double ds = p * (dp - delta);
              for (int64_t d = 0; d < D; ++d) {
                dq_row[d] += scale * ds * (double)AT4(k, b, g, j, d);
                dk_acc[j * D + d] += scale * ds * (double)AT4(q, b, h, i, d);
                dv_acc[j * D + d] += p * (double)AT4(dout, b, h, i, d);
              }
            }
          for (int64_t d = 0; d < D; ++d) AT4(dq, b, h, i, d) = (float)dq_row[d];
        }
      for (int64_t j = 0; j < M; ++j)
        for (int64_t d = 0; d < D; ++d) {
          AT4(dk, b, g, j, d) = (float)dk_acc[j * D + d];
          AT4(dv, b, g, j, d) = (float)dv_acc[j * D + d];
        }
    }
  free(dq_row);
  free(dk_acc);
  free(dv_acc);
  return 0;
}

static const moacert_kernel kernels[] = {
    /* op                 name            dtype  accepts_strided  run */
    {"attention.fwd", "tiled_fwd", "f32", 1, tiled_fwd},
    {"attention.fwd", "buffered_fwd", "f32", 1, buffered_fwd},
    {"attention.decode", "split_decode", "f32", 1, split_decode},
    {"attention.fwd", "tile_count_fwd", "f32", 1, tile_count_fwd},
    {"attention.fwd", "group8_fwd", "f32", 1, group8_fwd},
    {"attention.decode", "split64_decode", "f32", 1, split64_decode},
    {"rmsnorm", "width_rmsnorm", "f32", 1, width_rmsnorm},
    {"attention.bwd", "key_tile_bwd", "f32", 1, key_tile_bwd},
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
