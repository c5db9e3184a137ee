/* ort_session.h: ONNX Runtime's environment (logging fatal errors only: a
   failing run's message is the kernel's error return already), the session of the last
   model, and one run. Sessions run on adapter_threads() intra-op threads
   with ORT's default graph optimisations (ORT_ENABLE_ALL), as a user's
   session does. */
#include "ort_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/adapter_tensors.h"
#include "ort_decls.h"

static const OrtApi* g_api;
static OrtEnv* g_env;
static OrtMemoryInfo* g_cpu;
static OrtSession* g_session;
static onnx_bytes g_session_model;
static int g_session_threads; /* its intra-op threads: a call asking others gets a new one */

/* ORT's message into err, and the status released: 1; 0 for success */
static int failed(OrtStatus* s, const char* what, char* err, size_t err_len) {
  if (!s) return 0;
  snprintf(err, err_len, "onnxruntime %s: %s", what, g_api->GetErrorMessage(s));
  g_api->ReleaseStatus(s);
  return 1;
}

int ort_open(char* err, size_t err_len) {
  if (g_api) return 0;
  const OrtApiBase* base = OrtGetApiBase();
  const char* version = base->GetVersionString();
  if (strcmp(version, MOACERT_ORT_VERSION) != 0) {
    snprintf(err, err_len,
             "onnxruntime: libonnxruntime.so.1 is ONNX Runtime %s, the adapter is built for %s "
             "(onnxruntime-node 1.30.0; bash scripts/setup-deployed.sh)",
             version, MOACERT_ORT_VERSION);
    return -1;
  }
  const OrtApi* api = base->GetApi(MOACERT_ORT_API_VERSION);
  if (!api) {
    snprintf(err, err_len, "onnxruntime: libonnxruntime.so.1 %s has no C API version %d", version,
             MOACERT_ORT_API_VERSION);
    return -1;
  }
  g_api = api;
  if (failed(api->CreateEnv(ORT_LOGGING_LEVEL_FATAL, "moacert", &g_env), "CreateEnv", err,
             err_len) ||
      failed(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &g_cpu),
             "CreateCpuMemoryInfo", err, err_len)) {
    g_api = NULL;
    return -1;
  }
  return 0;
}

static int64_t numel(const ort_tensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

static size_t element_size(int elem_type) {
  return elem_type == ONNX_BOOL ? 1 : elem_type == ONNX_FLOAT16 ? 2 : 4; /* f32, int32 */
}

static int session_for(const onnx_bytes* model, char* err, size_t err_len) {
  if (g_session && g_session_threads == adapter_threads() && g_session_model.size == model->size &&
      memcmp(g_session_model.data, model->data, model->size) == 0)
    return 0;
  if (g_session) g_api->ReleaseSession(g_session);
  g_session = NULL;
  onnx_bytes_free(&g_session_model);
  OrtSessionOptions* options = NULL;
  if (failed(g_api->CreateSessionOptions(&options), "CreateSessionOptions", err, err_len)) return 1;
  int rc = failed(g_api->SetIntraOpNumThreads(options, adapter_threads()), "SetIntraOpNumThreads",
                  err, err_len);
  if (!rc)
    rc = failed(g_api->CreateSessionFromArray(g_env, model->data, model->size, options, &g_session),
                "CreateSessionFromArray", err, err_len);
  g_api->ReleaseSessionOptions(options);
  if (rc) return rc;
  g_session_threads = adapter_threads();
  g_session_model.data = (uint8_t*)malloc(model->size);
  if (g_session_model.data) {
    memcpy(g_session_model.data, model->data, model->size);
    g_session_model.size = g_session_model.capacity = model->size;
  }
  return 0;
}

int ort_run(const onnx_bytes* model, const ort_tensor* inputs, int n_inputs,
            const ort_tensor* outputs, int n_outputs, char* err, size_t err_len) {
  if (ort_open(err, err_len) != 0) return 1;
  if (!model->ok) {
    snprintf(err, err_len, "onnxruntime: out of memory writing the model");
    return 1;
  }
  if (session_for(model, err, err_len)) return 1;
  enum { MAX = 8 };
  OrtValue* in[MAX] = {0};
  OrtValue* out[MAX] = {0};
  const char* in_names[MAX];
  const char* out_names[MAX];
  int rc = 0;
  for (int i = 0; i < n_inputs && !rc; ++i) {
    in_names[i] = inputs[i].name;
    rc = failed(
        g_api->CreateTensorWithDataAsOrtValue(
            g_cpu, inputs[i].data, (size_t)numel(&inputs[i]) * element_size(inputs[i].elem_type),
            inputs[i].shape, (size_t)inputs[i].rank, inputs[i].elem_type, &in[i]),
        "CreateTensorWithDataAsOrtValue", err, err_len);
  }
  for (int i = 0; i < n_outputs; ++i) out_names[i] = outputs[i].name;
  if (!rc)
    rc = failed(g_api->Run(g_session, NULL, in_names, (const OrtValue* const*)in, (size_t)n_inputs,
                           out_names, (size_t)n_outputs, out),
                "Run", err, err_len);
  for (int i = 0; i < n_outputs && !rc; ++i) {
    void* data = NULL;
    rc = failed(g_api->GetTensorMutableData(out[i], &data), "GetTensorMutableData", err, err_len);
    if (!rc)
      memcpy(outputs[i].data, data,
             (size_t)numel(&outputs[i]) * element_size(outputs[i].elem_type));
  }
  for (int i = 0; i < MAX; ++i) {
    if (in[i]) g_api->ReleaseValue(in[i]);
    if (out[i]) g_api->ReleaseValue(out[i]);
  }
  return rc;
}
