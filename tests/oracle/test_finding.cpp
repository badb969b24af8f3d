// Finding signatures: message normalisation, dedup key, stable id, human title.
#include <doctest/doctest.h>

#include <string>

#include "tfg/oracle/finding.hpp"  // first: the header must compile on its own

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_oracle_finding {

using tfg::oracle::finding_kind;
using tfg::oracle::finding_signature;
using tfg::oracle::normalise_message;

TEST_CASE("normalise_message: the model file's name is not part of the message") {
  // A finding's reruns and repro run the same model under another name.
  const auto a = normalise_message("float64_reference: /tmp/c/current.pt (float64): node 12 (aten::linear) failed");
  const auto b =
      normalise_message("float64_reference: /tmp/c/findings/0a1b/mutant.pt (float64): node 12 (aten::linear) failed");
  CHECK(a == b);
  CHECK(a.find("MODEL.pt") != std::string::npos);
  CHECK(normalise_message("seed_v2.pt: bad") == normalise_message("x.pt: bad"));
  CHECK(normalise_message("conv.py:10 failed") == "conv.py:N failed");  // other files keep their names
}

TEST_CASE("normalise_message: the counters of generated node names are not part of the message") {
  // F13 met in BERT and in GPT-2: the exporter numbers its nodes by position.
  const auto bert = normalise_message(
      "onnxruntime: export: the exporter wrote an invalid ONNX model: InferenceError: (op_type:MaxPool, node name: "
      "node_MaxPool_25): Attribute dilations has incorrect size");
  const auto gpt2 = normalise_message(
      "onnxruntime: export: the exporter wrote an invalid ONNX model: InferenceError: (op_type:MaxPool, node name: "
      "node_MaxPool_310): Attribute dilations has incorrect size");
  CHECK(bert == gpt2);
  CHECK(bert.find("node name: NODE)") != std::string::npos);
  // ... and in EfficientNet, where the exporter named the node after its FX node (30-minute
  // ONNX fuzz: the two names made two defects of one).
  const auto effnet = normalise_message(
      "onnxruntime: export: the exporter wrote an invalid ONNX model: InferenceError: (op_type:MaxPool, node name: "
      "node_max_pool2d): Attribute dilations has incorrect size");
  CHECK(effnet == bert);
  CHECK(normalise_message("Node (/dense_head/MaxPool_1) Op (MaxPool) [ShapeInferenceError] x") ==
        normalise_message("Node (node_max_pool2d) Op (MaxPool) [ShapeInferenceError] x"));
  CHECK(normalise_message("Node (a) Op (MaxPool)") != normalise_message("Node (a) Op (AveragePool)"));
  CHECK(normalise_message("hardswish_18 failed") == "hardswish_N failed");
  // Digits inside a name stay: they are the name, not a counter.
  CHECK(normalise_message("conv2d and int64 and float64_reference") == "conv2d and int64 and float64_reference");
  CHECK(normalise_message("layer_2b failed") == "layer_2b failed");
}

TEST_CASE("finding: kind names round-trip") {
  for (finding_kind k : tfg::oracle::all_finding_kinds) {
    const auto parsed = tfg::oracle::parse_finding_kind(tfg::oracle::to_string(k));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == k);
  }
  CHECK(tfg::oracle::to_string(finding_kind::out_of_memory) == "out_of_memory");
  CHECK_FALSE(tfg::oracle::parse_finding_kind("Crash").has_value());
  CHECK_FALSE(tfg::oracle::parse_finding_kind("").has_value());
}

TEST_CASE("finding: normalisation masks numbers, addresses, paths and shapes") {
  const std::string a =
      "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1\n"
      "Exception raised from infer_size_impl at /pytorch/aten/src/ATen/ExpandUtils.cpp:31 (most "
      "recent call first):\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x8d (0x7f3a2c1d in "
      "/usr/lib/libc10.so)\n";
  const std::string b =
      "The size of tensor a (17) must match the size of tensor b (2)  at non-singleton dimension "
      "0\n"
      "Exception raised from infer_size_impl at /other/build/ExpandUtils.cpp:35 (most recent "
      "call first):\nframe #0: something else entirely\n";
  CHECK(normalise_message(a) == normalise_message(b));
  CHECK(normalise_message(a) ==
        "The size of tensor a (N) must match the size of tensor b (N) at non-singleton dimension N");

  // Addresses and absolute paths.
  CHECK(normalise_message("invalid pointer 0x7ffd5e8a1c20 in /home/u/x/lib/libtorch_cpu.so") ==
        normalise_message("invalid pointer 0x55aa00 in /opt/y/libtorch_cpu.so"));
  CHECK(normalise_message("invalid pointer 0x7ffd5e8a1c20 in /home/u/x/lib/libtorch_cpu.so") ==
        "invalid pointer ADDR in libtorch_cpu.so");

  // Shapes keep their rank; spacing inside brackets is canonical.
  CHECK(normalise_message("input shape [1, 3, 64, 64] vs [2,3,32,   32]") ==
        "input shape [N, N, N, N] vs [N, N, N, N]");
  CHECK(normalise_message("shape [1, 3, 64]") != normalise_message("shape [1, 3, 64, 64]"));
  CHECK(normalise_message("mat1 and mat2 shapes cannot be multiplied (4x8 and 16x2)") ==
        "mat1 and mat2 shapes cannot be multiplied (NxN and NxN)");
  CHECK(normalise_message("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total)") ==
        "CUDA out of memory. Tried to allocate N GiB (GPU N; N GiB total)");

  // Numbers inside identifiers stay: different operators and dtypes remain distinguishable.
  CHECK(normalise_message("aten::conv2d failed for int64") == "aten::conv2d failed for int64");
  CHECK(normalise_message("aten::conv2d failed") != normalise_message("aten::conv3d failed"));
  CHECK(normalise_message("value -1.5e-3 and 2.0 and 7") == "value N and N and N");

  // Whitespace collapses, empty lines are skipped, length is capped.
  CHECK(normalise_message("  a \t b\n\n  c  ") == "a b c");
  CHECK(normalise_message(std::string(1000, 'x')).size() <= tfg::oracle::normalised_message_max);
  CHECK(normalise_message("").empty());
}

TEST_CASE("finding: normalisation picks the error line after a TorchScript traceback") {
  const std::string msg =
      "The following operation failed in the TorchScript interpreter.\n"
      "Traceback of TorchScript, serialized code (most recent call last):\n"
      "  File \"code/__torch__.py\", line 12, in forward\n"
      "    x = torch.conv2d(input, w)\n"
      "RuntimeError: Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 4, 32, 32]\n";
  CHECK(normalise_message(msg) ==
        "RuntimeError: Given groups=N, weight of size [N, N, N, N], expected input[N, N, N, N]");
}

TEST_CASE("finding: key, id and title") {
  finding_signature s;
  s.kind = finding_kind::numeric;
  s.config_a = "graph_executor";
  s.config_b = "eager_op_by_op";
  s.culprit_op = "aten::conv2d";
  s.dtype = "f32";
  s.device = "cpu";
  CHECK(s.key() == "numeric|graph_executor|eager_op_by_op|aten::conv2d|f32|cpu|");
  CHECK(s.title() == "numeric mismatch graph_executor vs eager_op_by_op at aten::conv2d f32 cpu");

  const std::string id = s.id();
  REQUIRE(id.size() == 16);
  for (char c : id) CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
  finding_signature copy = s;
  CHECK(copy.id() == id);  // deterministic

  // Any field changes the identity.
  finding_signature other_op = s;
  other_op.culprit_op = "aten::linear";
  CHECK(other_op.id() != id);
  finding_signature other_kind = s;
  other_kind.kind = finding_kind::nan_inf;
  CHECK(other_kind.id() != id);

  // '|' inside a field cannot forge another key.
  finding_signature p1, p2;
  p1.config_a = "a|b";
  p2.config_a = "a";
  p2.config_b = "b";
  CHECK(p1.key() != p2.key());
  CHECK(p1.id() != p2.id());
}

TEST_CASE("finding: crash and exception titles") {
  finding_signature c;
  c.kind = finding_kind::crash;
  c.symptom = "SIGSEGV";
  c.config_a = "eager_op_by_op";
  c.detail = "at::native::foo < at::native::bar < at::_ops::foo::call";
  CHECK(c.title() == "SIGSEGV-crash in at::native::foo (eager_op_by_op)");
  CHECK(c.key().starts_with("crash:SIGSEGV|eager_op_by_op||"));
  finding_signature bus = c;
  bus.symptom = "SIGBUS";
  CHECK(bus.id() != c.id());

  finding_signature e;
  e.kind = finding_kind::exception;
  e.culprit_op = "aten::add";
  e.config_a = "graph_executor";
  e.detail = normalise_message("The size of tensor a (3) must match the size of tensor b (4)\nx");
  CHECK(e.title() ==
        "exception in aten::add: The size of tensor a (N) must match the size of tensor b (N) x "
        "(graph_executor)");
  e.detail = std::string(500, 'y');
  CHECK(e.title().size() <= 160);
  CHECK(e.title().find('\n') == std::string::npos);
}

}  // namespace tfg_test_oracle_finding
