/* A stand-in for libonnxruntime.so.1 of another release (its symbol
   versioned VERS_1.29.0, stub_onnxruntime.map, where 1.30.0's are
   VERS_1.30.0), put first on LD_LIBRARY_PATH by CTest to show the ONNX
   Runtime adapter refused, with one line, by a library of another release.
   Never called: the loader stops at the missing version. */
#include <stddef.h>

void* OrtGetApiBase(void) {
  return NULL;
}
