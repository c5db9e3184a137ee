/* The few declarations of ONNX Runtime's C API the adapter uses. The npm
   package onnxruntime-node 1.30.0 ships libonnxruntime.so.1 (ORT 1.30.0,
   its symbols versioned VERS_1.30.0) without onnxruntime_c_api.h. OrtApi
   is a table of function pointers that only ever grows (ORT's C API
   promise: "DO NOT MODIFY ABOVE" each shipped version), so the adapter
   declares the slots it calls by their index in that table, as
   include/onnxruntime/core/session/onnxruntime_c_api.h of 1.30.0 numbers
   them, and asks GetApi for ORT_API_VERSION 30 (1.30's): an older library
   returns NULL and is refused. */
#ifndef MOACERT_ORT_DECLS_H
#define MOACERT_ORT_DECLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOACERT_ORT_VERSION "1.30.0"
#define MOACERT_ORT_API_VERSION 30

typedef struct OrtEnv OrtEnv;
typedef struct OrtStatus OrtStatus;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtValue OrtValue;
typedef struct OrtRunOptions OrtRunOptions;

enum { ORT_LOGGING_LEVEL_FATAL = 4 };
enum { OrtArenaAllocator = 1 };
enum { OrtMemTypeDefault = 0 };
/* ONNXTensorElementDataType, TensorProto.DataType's numbers */
enum { ONNX_FLOAT = 1, ONNX_INT32 = 6, ONNX_BOOL = 9, ONNX_FLOAT16 = 10 };

/* The OrtApi slots called, by index; the others are opaque padding. */
typedef struct OrtApi {
  OrtStatus* (*CreateStatus)(int code, const char* msg);                            /* 0 */
  int (*GetErrorCode)(const OrtStatus* status);                                     /* 1 */
  const char* (*GetErrorMessage)(const OrtStatus* status);                          /* 2 */
  OrtStatus* (*CreateEnv)(int log_severity_level, const char* logid, OrtEnv** out); /* 3 */
  void* slots_4_7[4];
  OrtStatus* (*CreateSessionFromArray)(const OrtEnv* env, const void* model_data,
                                       size_t model_data_length, const OrtSessionOptions* options,
                                       OrtSession** out); /* 8 */
  OrtStatus* (*Run)(OrtSession* session, const OrtRunOptions* run_options,
                    const char* const* input_names, const OrtValue* const* inputs, size_t input_len,
                    const char* const* output_names, size_t output_names_len,
                    OrtValue** outputs);                           /* 9 */
  OrtStatus* (*CreateSessionOptions)(OrtSessionOptions** options); /* 10 */
  void* slots_11_23[13];
  OrtStatus* (*SetIntraOpNumThreads)(OrtSessionOptions* options, int n); /* 24 */
  void* slots_25_48[24];
  OrtStatus* (*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo* info, void* p_data,
                                               size_t p_data_len, const int64_t* shape,
                                               size_t shape_len, int type, OrtValue** out); /* 49 */
  void* slot_50;
  OrtStatus* (*GetTensorMutableData)(OrtValue* value, void** out); /* 51 */
  void* slots_52_68[17];
  OrtStatus* (*CreateCpuMemoryInfo)(int type, int mem_type, OrtMemoryInfo** out); /* 69 */
  void* slots_70_91[22];
  void (*ReleaseEnv)(OrtEnv* input);               /* 92 */
  void (*ReleaseStatus)(OrtStatus* input);         /* 93 */
  void (*ReleaseMemoryInfo)(OrtMemoryInfo* input); /* 94 */
  void (*ReleaseSession)(OrtSession* input);       /* 95 */
  void (*ReleaseValue)(OrtValue* input);           /* 96 */
  void* slots_97_99[3];
  void (*ReleaseSessionOptions)(OrtSessionOptions* input); /* 100 */
} OrtApi;

typedef struct OrtApiBase {
  const OrtApi* (*GetApi)(uint32_t version);
  const char* (*GetVersionString)(void);
} OrtApiBase;

const OrtApiBase* OrtGetApiBase(void);

#ifdef __cplusplus
}
#endif

#endif
