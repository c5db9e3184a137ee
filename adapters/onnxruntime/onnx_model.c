/* onnx_model.h's protobuf writer. Wire types: 0 varint, 2 length-delimited,
   5 fixed32. Field numbers are onnx.proto3's (ONNX 1.18). */
#include "onnx_model.h"

#include <stdlib.h>
#include <string.h>

enum { VARINT = 0, LENGTH_DELIMITED = 2, FIXED32 = 5 };

void onnx_bytes_free(onnx_bytes* b) {
  free(b->data);
  b->data = NULL;
  b->size = b->capacity = 0;
}

static void put(onnx_bytes* b, const void* p, size_t n) {
  if (b->capacity == 0) b->ok = 1;
  if (!b->ok || n == 0) return;
  if (b->size + n > b->capacity) {
    size_t c = b->capacity ? b->capacity : 256;
    while (c < b->size + n) c *= 2;
    uint8_t* d = (uint8_t*)realloc(b->data, c);
    if (!d) {
      b->ok = 0;
      return;
    }
    b->data = d;
    b->capacity = c;
  }
  memcpy(b->data + b->size, p, n);
  b->size += n;
}

static void varint(onnx_bytes* b, uint64_t v) {
  uint8_t out[10];
  size_t n = 0;
  do {
    out[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) out[n] |= 0x80;
    ++n;
  } while (v);
  put(b, out, n);
}

static void key(onnx_bytes* b, int field, int wire) {
  varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

static void field_int(onnx_bytes* b, int field, int64_t v) {
  key(b, field, VARINT);
  varint(b, (uint64_t)v);
}

static void field_bytes(onnx_bytes* b, int field, const void* p, size_t n) {
  key(b, field, LENGTH_DELIMITED);
  varint(b, n);
  put(b, p, n);
}

static void field_string(onnx_bytes* b, int field, const char* s) {
  field_bytes(b, field, s, strlen(s));
}

/* a sub-message, then freed */
static void field_message(onnx_bytes* b, int field, onnx_bytes* m) {
  if (!m->ok && m->capacity) b->ok = 0;
  field_bytes(b, field, m->data ? m->data : (const uint8_t*)"", m->size);
  onnx_bytes_free(m);
}

/* ValueInfoProto { name = 1; type = 2 } with TypeProto { tensor_type = 1 },
   TypeProto.Tensor { elem_type = 1; shape = 2 }, TensorShapeProto
   { dim = 1 }, Dimension { dim_value = 1 } */
static void value_info(onnx_bytes* graph, int field, const char* name, int elem_type,
                       const int64_t* shape, int rank) {
  onnx_bytes shape_proto = {0};
  for (int i = 0; i < rank; ++i) {
    onnx_bytes dim = {0};
    field_int(&dim, 1, shape[i]);
    field_message(&shape_proto, 1, &dim);
  }
  onnx_bytes tensor = {0};
  field_int(&tensor, 1, elem_type);
  field_message(&tensor, 2, &shape_proto);
  onnx_bytes type = {0};
  field_message(&type, 1, &tensor);
  onnx_bytes info = {0};
  field_string(&info, 1, name);
  field_message(&info, 2, &type);
  field_message(graph, field, &info);
}

/* GraphProto { input = 11; output = 12 } */
void onnx_graph_input(onnx_graph* g, const char* name, int elem_type, const int64_t* shape,
                      int rank) {
  value_info(&g->graph, 11, name, elem_type, shape, rank);
}

void onnx_graph_output(onnx_graph* g, const char* name, int elem_type, const int64_t* shape,
                       int rank) {
  value_info(&g->graph, 12, name, elem_type, shape, rank);
}

/* GraphProto { node = 1 }, NodeProto { input = 1; output = 2; op_type = 4;
   attribute = 5; domain = 7 }, AttributeProto { name = 1; f = 2; i = 3;
   type = 20 (FLOAT 1, INT 2) } */
void onnx_graph_node(onnx_graph* g, const char* op_type, const char* domain,
                     const char* const* inputs, int n_inputs, const char* const* outputs,
                     int n_outputs, const onnx_attribute* attributes, int n_attributes) {
  onnx_bytes node = {0};
  for (int i = 0; i < n_inputs; ++i) field_string(&node, 1, inputs[i]);
  for (int i = 0; i < n_outputs; ++i) field_string(&node, 2, outputs[i]);
  field_string(&node, 4, op_type);
  for (int i = 0; i < n_attributes; ++i) {
    onnx_bytes a = {0};
    field_string(&a, 1, attributes[i].name);
    if (attributes[i].is_float) {
      key(&a, 2, FIXED32);
      uint32_t bits;
      memcpy(&bits, &attributes[i].f, sizeof bits);
      const uint8_t le[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16),
                             (uint8_t)(bits >> 24)};
      put(&a, le, 4);
      field_int(&a, 20, 1);
    } else {
      field_int(&a, 3, attributes[i].i);
      field_int(&a, 20, 2);
    }
    field_message(&node, 5, &a);
  }
  if (domain && *domain) field_string(&node, 7, domain);
  field_message(&g->graph, 1, &node);
}

/* ModelProto { ir_version = 1; producer_name = 2; graph = 7;
   opset_import = 8 }, OperatorSetIdProto { domain = 1; version = 2 } */
onnx_bytes onnx_model(onnx_graph* g, int64_t opset) {
  field_string(&g->graph, 2, "moacert");
  onnx_bytes model = {0};
  field_int(&model, 1, 11);
  field_string(&model, 2, "moacert");
  field_message(&model, 7, &g->graph);
  onnx_bytes onnx_opset = {0};
  field_string(&onnx_opset, 1, "");
  field_int(&onnx_opset, 2, opset);
  field_message(&model, 8, &onnx_opset);
  onnx_bytes ms_opset = {0};
  field_string(&ms_opset, 1, "com.microsoft");
  field_int(&ms_opset, 2, 1);
  field_message(&model, 8, &ms_opset);
  return model;
}
