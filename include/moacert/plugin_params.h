/* Reading the params_json moacert passes to a plugin kernel (docs/plugins.md):
   a flat JSON object such as {"scale":0.125,"causal":true}, numbers printed
   with 17 significant digits. Header-only C, usable from C++ too; not part
   of the plugin ABI (plugin.h), a convenience for kernels written in C. */
#ifndef MOACERT_PLUGIN_PARAMS_H
#define MOACERT_PLUGIN_PARAMS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The number after "key": in `json`, or `fallback` when the key is absent. */
static inline double moacert_param(const char* json, const char* key, double fallback) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char* p = strstr(json, pattern);
  return p ? strtod(p + strlen(pattern), NULL) : fallback;
}

/* 1 when `json` holds "key":true, else 0. */
static inline int moacert_flag(const char* json, const char* key) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":true", key);
  return strstr(json, pattern) != NULL;
}

#endif
