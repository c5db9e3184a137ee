/* ONNX models written as protobuf bytes by hand (onnx_model.c): the
   adapter builds each kernel's one-node (or, for the MLP, six-node) graph
   at run time with the call's shapes and parameters, and hands the bytes to
   CreateSessionFromArray. Nothing of ONNX's or protobuf's is needed: a
   ModelProto is a handful of nested length-delimited fields (onnx.proto3's
   field numbers, cited where written). */
#ifndef MOACERT_ONNX_MODEL_H
#define MOACERT_ONNX_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer; ok is 0 after an allocation failed. */
typedef struct onnx_bytes {
  uint8_t* data;
  size_t size, capacity;
  int ok;
} onnx_bytes;

void onnx_bytes_free(onnx_bytes* b);

/* A graph under construction: its nodes, inputs and outputs. */
typedef struct onnx_graph {
  onnx_bytes graph; /* GraphProto's fields so far */
} onnx_graph;

/* An input or output of the graph: name, element type (ONNX_FLOAT, ...),
   shape. */
void onnx_graph_input(onnx_graph* g, const char* name, int elem_type, const int64_t* shape,
                      int rank);
void onnx_graph_output(onnx_graph* g, const char* name, int elem_type, const int64_t* shape,
                       int rank);

/* One attribute of a node: an int or a float. */
typedef struct onnx_attribute {
  const char* name;
  int is_float;
  int64_t i;
  float f;
} onnx_attribute;

/* A node: op type, domain ("" for ONNX's), inputs ("" for an absent
   optional one), outputs, attributes. */
void onnx_graph_node(onnx_graph* g, const char* op_type, const char* domain,
                     const char* const* inputs, int n_inputs, const char* const* outputs,
                     int n_outputs, const onnx_attribute* attributes, int n_attributes);

/* The ModelProto of the graph, importing ONNX's opset `opset` (and
   com.microsoft's 1): IR version 11 (ONNX 1.18, opset 23). Frees g. */
onnx_bytes onnx_model(onnx_graph* g, int64_t opset);

#endif
