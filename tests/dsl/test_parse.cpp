// Positive tests of the DSL front end: the examples embedded in dsl/spec.md and every file in
// operators/ parse and check cleanly; the AST holds what the text says; the diagnostic
// printer's exact format; parse() survives a seeded fuzz of mutated inputs.

#include <doctest/doctest.h>

#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "dsl_test_util.hpp"
#include "tfg/dsl/builtins.hpp"
#include "tfg/dsl/parse.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_dsl_parse {

namespace dsl = tfg::dsl;

namespace {

std::string spec_text() { return tfg_test::read_file(tfg_test::source_dir() / "dsl" / "spec.md"); }

/// Parses text that must be clean; fails the test with the printed diagnostics otherwise.
dsl::parse_result parse_clean(const std::string& text, const std::string& name = "test.tfg") {
  auto r = dsl::parse(text, name);
  INFO(r.format_diagnostics());
  CHECK(r.diagnostics.empty());
  return r;
}

/// The source text a loc spans.
std::string spelled(const dsl::parse_result& r, dsl::source_loc l) { return r.source.text.substr(l.offset, l.len); }

/// The one operator of a clean single-operator text.
const dsl::operator_decl& only_operator(const dsl::parse_result& r) {
  REQUIRE(r.ast.operators.size() == 1);
  return r.ast.operators.front();
}

/// An operator skeleton with the given body parts, valid on its own.
std::string wrap(const std::string& header_extra, const std::string& body) {
  return "tfg 1\noperator t object operator primitive update origin tfg " + header_extra + " {\n" + body +
         "\n  example match { graph(%a: f32[2]): %y = aten::relu(%a) return (%y) }\n"
         "  example no_match rejected_by(pattern) { graph(): return () }\n}\n";
}

}  // namespace

TEST_CASE("the complete examples of dsl/spec.md parse and check cleanly") {
  const auto blocks = tfg_test::fenced_blocks(spec_text(), "tfg");
  REQUIRE(blocks.size() == 3);
  std::vector<std::string> names;
  for (const auto& b : blocks) {
    INFO("spec.md block at line " << b.first_line);
    const auto r = parse_clean(b.text, "spec.md");
    REQUIRE(r.ast.operators.size() == 1);
    names.push_back(r.ast.operators.front().name.text);
  }
  CHECK(names == std::vector<std::string>{"break_alias_with_clone", "pow2_rescale", "branch_local_clone"});
}

TEST_CASE("every operator file parses and checks cleanly") {
  // requirements/ will hold R(v) specifications, not operators.
  const auto files = tfg_test::files_with_extension(tfg_test::source_dir() / "operators", ".tfg", {"requirements"});
  REQUIRE(files.size() >= 4);
  for (const auto& f : files) {
    INFO("file: " << f.string());
    const auto r = dsl::parse(tfg_test::read_file(f), f.string());
    INFO(r.format_diagnostics());
    CHECK(r.diagnostics.empty());
    REQUIRE(r.ast.operators.size() == 1);
    const auto& op = r.ast.operators.front();
    CHECK(op.name.text == f.stem().string());  // one operator per file, named like it
    CHECK(!op.doc.empty());
    // The folder is the operator's object.
    static constexpr const char* folders[] = {"tensor", "operator", "relation", "subgraph"};
    REQUIRE(op.object.has_value());
    CHECK(f.parent_path().filename().string() == folders[static_cast<int>(*op.object)]);
  }
}

TEST_CASE("AST of the pow2_rescale example") {
  const auto blocks = tfg_test::fenced_blocks(spec_text(), "tfg");
  REQUIRE(blocks.size() == 3);
  const auto r = parse_clean(blocks[1].text);
  const auto& op = only_operator(r);

  CHECK(op.name.text == "pow2_rescale");
  CHECK(op.doc.rfind("DF-T06: multiply by 2^k", 0) == 0);
  CHECK(op.object == dsl::object_kind::tensor);
  CHECK(op.primitive == dsl::primitive_kind::update);
  REQUIRE(op.origin.has_value());
  CHECK(!op.origin->from_cg);
  CHECK(op.origin->rule_id == "DF-T06");
  CHECK(op.values.preserves);
  CHECK(!op.values.atol.has_value());
  REQUIRE(op.anchor.has_value());
  CHECK(op.anchor->text == "x");
  CHECK(!op.pattern.has_value());

  REQUIRE(op.params.size() == 1);
  const auto& k = op.params[0];
  CHECK(k.name.text == "k");
  CHECK(k.doc == "The exponent, sampled per candidate.");
  REQUIRE(k.type_name.has_value());
  CHECK(k.type_name->text == "int");
  CHECK(k.domain == dsl::domain_kind::range);
  REQUIRE(k.domain_values.size() == 2);
  CHECK(k.domain_values[0].int_value == 1);
  CHECK(k.domain_values[1].int_value == 8);
  CHECK(k.resolved == dsl::type{dsl::type_kind::integer, false});

  // require input { is_floating(%x) && finite(%x)
  //                 max_abs(%x) * pow2($k) < dtype_max(dtype(%x)) }
  REQUIRE(op.require_input.has_value());
  const auto& in = op.require_input->conditions;
  REQUIRE(in.size() == 2);
  CHECK(in[0].kind == dsl::expr_kind::binary);
  CHECK(in[0].op == dsl::op_code::logical_and);
  CHECK(in[0].args[0].kind == dsl::expr_kind::call);
  CHECK(in[0].args[0].text == "is_floating");
  CHECK(in[0].args[0].args[0].kind == dsl::expr_kind::value);
  CHECK(in[0].args[0].args[0].text == "x");
  CHECK(in[0].args[1].text == "finite");
  const auto& lt = in[1];
  CHECK(lt.op == dsl::op_code::lt);
  CHECK(lt.resolved == dsl::type{dsl::type_kind::boolean, false});
  const auto& mul = lt.args[0];
  CHECK(mul.op == dsl::op_code::mul);
  CHECK(mul.args[0].text == "max_abs");
  CHECK(mul.args[1].text == "pow2");
  CHECK(mul.args[1].args[0].kind == dsl::expr_kind::param);
  CHECK(mul.args[1].args[0].text == "k");
  CHECK(mul.resolved == dsl::type{dsl::type_kind::floating, false});
  CHECK(lt.args[1].text == "dtype_max");
  CHECK(lt.args[1].args[0].text == "dtype");
  CHECK(spelled(r, lt.loc) == "max_abs(%x) * pow2($k) < dtype_max(dtype(%x))");

  REQUIRE(op.replace.has_value());
  const auto& rep = *op.replace;
  REQUIRE(rep.nodes.size() == 2);
  CHECK(rep.nodes[0].results.at(0).text == "up");
  CHECK(rep.nodes[0].op.kind == dsl::op_spec_kind::names);
  CHECK(rep.nodes[0].op.names.at(0).text == "aten::mul");
  CHECK(rep.nodes[1].args.at(1).text == "pow2");
  const auto& neg = rep.nodes[1].args.at(1).args.at(0);  // pow2(-$k)
  CHECK(neg.kind == dsl::expr_kind::unary);
  CHECK(neg.op == dsl::op_code::neg);
  CHECK(neg.args.at(0).text == "k");
  REQUIRE(rep.rewires.size() == 1);
  CHECK(rep.rewires[0].all);
  CHECK(rep.rewires[0].source.text == "x");
  CHECK(rep.rewires[0].target.text == "down");
  CHECK(rep.deletes.empty());

  REQUIRE(op.examples.size() == 2);
  const auto& m = op.examples[0];
  CHECK(m.match);
  REQUIRE(m.graph.inputs.size() == 1);
  const auto& a = m.graph.inputs[0];
  CHECK(a.name.text == "a");
  CHECK(a.type_name.text == "f32");
  CHECK(a.tensor);
  REQUIRE(a.dims.size() == 1);
  CHECK(a.dims[0].int_value == 4);
  REQUIRE(a.attrs.size() == 2);
  CHECK(a.attrs[0].key.text == "min");
  CHECK(a.attrs[0].value->float_value == -2.0);
  CHECK(m.anchor->text == "x");
  CHECK(m.has_expect);
  REQUIRE(m.expect.size() == 1);
  CHECK(m.expect[0].args[0].text == "count");
  CHECK(m.expect[0].args[0].args[0].kind == dsl::expr_kind::op_name);
  CHECK(m.expect[0].args[0].args[0].text == "aten::mul");
  const auto& nm = op.examples[1];
  CHECK(!nm.match);
  CHECK(nm.rejected_by == dsl::stage::input);
  CHECK(nm.graph.outputs.at(0).text == "x");
}

TEST_CASE("AST of the branch_local_clone example: extern, structural pattern, consumer index") {
  const auto blocks = tfg_test::fenced_blocks(spec_text(), "tfg");
  REQUIRE(blocks.size() == 3);
  const auto r = parse_clean(blocks[2].text);
  REQUIRE(r.ast.externs.size() == 1);
  const auto& ex = r.ast.externs[0];
  CHECK(ex.predicate);
  CHECK(ex.name.text == "no_inplace_writer");
  REQUIRE(ex.param_types.size() == 1);
  CHECK(ex.param_types[0].text == "tensor");
  CHECK(ex.resolved_result == dsl::type{dsl::type_kind::boolean, false});

  const auto& op = only_operator(r);
  CHECK(op.object == dsl::object_kind::relation);
  CHECK(op.primitive == dsl::primitive_kind::rewiring);
  REQUIRE(op.pattern.has_value());
  CHECK(op.pattern->nodes.empty());
  REQUIRE(op.pattern->conditions.size() == 1);
  const auto& c = op.pattern->conditions[0];
  CHECK(c.op == dsl::op_code::ge);
  CHECK(c.args[0].text == "consumers");
  CHECK(c.args[1].int_value == 2);

  const auto& rw = op.replace->rewires.at(0);
  CHECK(!rw.all);
  CHECK(rw.source.text == "t");
  REQUIRE(rw.which.has_value());
  CHECK(rw.which->kind == dsl::expr_kind::param);
  CHECK(rw.target.text == "p");
  CHECK(op.examples.at(1).rejected_by == dsl::stage::pattern);
}

TEST_CASE("pattern lines: alternatives, wildcards, params, multiple results, literals") {
  const auto r = parse_clean(wrap("anchor %y",
                                  "  param $act in {aten::relu, aten::gelu}\n"
                                  "  param $k : int in [1, 3]\n"
                                  "  pattern {\n"
                                  "    %y = aten::relu|aten::gelu|aten::silu(%x, ...)\n"
                                  "    %a, %b = *(%y, _, $k, -1, [3, 3], none, \"same\")\n"
                                  "    %c = $act(%a)\n"
                                  "    uses(%y) == 1; consumers(%a) >= 1\n"
                                  "  }\n"
                                  "  replace { %z = aten::clone(%c, none) rewire consumers(%c) -> %z delete %c }"));
  const auto& p = *only_operator(r).pattern;
  REQUIRE(p.nodes.size() == 3);
  const auto& n0 = p.nodes[0];
  CHECK(n0.op.kind == dsl::op_spec_kind::names);
  REQUIRE(n0.op.names.size() == 3);
  CHECK(n0.op.names[2].text == "aten::silu");
  CHECK(n0.args.at(1).kind == dsl::expr_kind::ellipsis);
  const auto& n1 = p.nodes[1];
  CHECK(n1.op.kind == dsl::op_spec_kind::any);
  REQUIRE(n1.results.size() == 2);
  CHECK(n1.results[1].text == "b");
  REQUIRE(n1.args.size() == 7);
  CHECK(n1.args[1].kind == dsl::expr_kind::wildcard);
  CHECK(n1.args[2].kind == dsl::expr_kind::param);
  CHECK(n1.args[3].kind == dsl::expr_kind::int_literal);
  CHECK(n1.args[3].int_value == -1);  // folded
  CHECK(n1.args[4].kind == dsl::expr_kind::list);
  CHECK(n1.args[5].kind == dsl::expr_kind::name);
  CHECK(n1.args[5].resolved == dsl::type{dsl::type_kind::none, false});
  CHECK(n1.args[6].kind == dsl::expr_kind::string_literal);
  CHECK(n1.args[6].text == "same");
  CHECK(p.nodes[2].op.kind == dsl::op_spec_kind::param);
  CHECK(p.nodes[2].op.param.text == "act");
  CHECK(p.conditions.size() == 2);
  CHECK(spelled(r, n0.loc) == "%y = aten::relu|aten::gelu|aten::silu(%x, ...)");
  CHECK(spelled(r, n0.op.loc) == "aten::relu|aten::gelu|aten::silu");
}

TEST_CASE("expressions: precedence, folding, indexing, strings, locations") {
  const auto r = parse_clean(wrap("anchor %y",
                                  "  pattern { %y = aten::relu(%x) }\n"
                                  "  require input {\n"
                                  "    finite(%x) || rank(%x) == 1 && is_floating(%x)\n"
                                  "    1 + 2 * 3 - 4 / 2 == 5.0\n"
                                  "    shape(%x)[-1] % 8 == 0\n"
                                  "    !(dtype(%x) in {f16, bf16}) && 2.5e-1 < 1\n"
                                  "    \"a\\\"b\\n\" == \"x\";  // ';': the next line starts with '-'\n"
                                  "    -rank(%x) < 0\n"
                                  "  }\n"
                                  "  replace { %z = aten::clone(%y, none) }"));
  const auto& c = only_operator(r).require_input->conditions;
  REQUIRE(c.size() == 6);
  // || is looser than &&, which is looser than ==.
  CHECK(c[0].op == dsl::op_code::logical_or);
  CHECK(c[0].args[1].op == dsl::op_code::logical_and);
  CHECK(c[0].args[1].args[0].op == dsl::op_code::eq);
  // ((1 + (2 * 3)) - (4 / 2)) == 5.0
  const auto& sum = c[1].args[0];
  CHECK(sum.op == dsl::op_code::sub);
  CHECK(sum.args[0].op == dsl::op_code::add);
  CHECK(sum.args[0].args[1].op == dsl::op_code::mul);
  CHECK(sum.args[1].op == dsl::op_code::div);
  CHECK(sum.resolved == dsl::type{dsl::type_kind::floating, false});
  CHECK(c[1].args[1].float_value == 5.0);
  // (shape(%x)[-1]) % 8 == 0
  const auto& mod = c[2].args[0];
  CHECK(mod.op == dsl::op_code::mod);
  CHECK(mod.args[0].kind == dsl::expr_kind::index);
  CHECK(mod.args[0].args[1].int_value == -1);
  CHECK(mod.args[0].resolved == dsl::type{dsl::type_kind::integer, false});
  CHECK(spelled(r, mod.args[0].loc) == "shape(%x)[-1]");
  // !(... in {...})
  const auto& notin = c[3].args[0];
  CHECK(notin.kind == dsl::expr_kind::unary);
  CHECK(notin.op == dsl::op_code::logical_not);
  CHECK(notin.args[0].op == dsl::op_code::in);
  CHECK(notin.args[0].args[1].kind == dsl::expr_kind::set);
  CHECK(notin.args[0].args[1].resolved == dsl::type{dsl::type_kind::dtype, true});
  CHECK(c[3].args[1].args[0].float_value == doctest::Approx(0.25));
  CHECK(c[4].args[0].text == "a\"b\n");
  CHECK(c[5].args[0].kind == dsl::expr_kind::unary);
  CHECK(c[5].args[0].op == dsl::op_code::neg);
  // Locations are 1-based and point at the token.
  const auto& x = c[0].args[0].args[0];
  CHECK(x.loc.line == 5);
  CHECK(x.loc.col == 12);
  CHECK(spelled(r, x.loc) == "%x");
}

TEST_CASE("replacement statements and the header clauses") {
  const auto r = parse_clean(
      "tfg 1\n"
      "operator t object subgraph primitive rewiring origin cg devmut \"MO3\"\n"
      "  preserves values within atol=1e-5, rtol=0 anchor %y {\n"
      "  param $i : int in [0, 1]\n"
      "  pattern { %y = aten::relu(%x)  %z = aten::neg(%y) }\n"
      "  replace {\n"
      "    %c = aten::clone(%x, none); %d = tfg::reshape_like(%c, %y)\n"
      "    rewire consumers(%y) -> %d\n"
      "    rewire consumer(%x, $i) -> %c\n"
      "    rewire consumer(%y, %z) -> %c\n"
      "    delete %y\n"
      "  }\n"
      "  example match { graph(%a: f32[2]): %y = aten::relu(%a) return (%y) }\n"
      "  example no_match rejected_by(internal) { graph(%n: int, %b: f32[]{cuda, nan}): return (%n) }\n"
      "}\n");
  const auto& op = only_operator(r);
  CHECK(op.object == dsl::object_kind::subgraph);
  CHECK(op.origin->from_cg);
  CHECK(op.origin->study == "devmut");
  CHECK(op.origin->rule_id == "MO3");
  CHECK(op.values.atol == 1e-5);
  CHECK(op.values.rtol == 0.0);
  const auto& rep = *op.replace;
  REQUIRE(rep.nodes.size() == 2);
  CHECK(rep.nodes[1].op.names[0].text == "tfg::reshape_like");
  REQUIRE(rep.rewires.size() == 3);
  CHECK(rep.rewires[0].all);
  CHECK(rep.rewires[1].which->kind == dsl::expr_kind::param);
  CHECK(rep.rewires[2].which->kind == dsl::expr_kind::value);
  CHECK(rep.rewires[2].which->text == "z");
  REQUIRE(rep.deletes.size() == 1);
  CHECK(rep.deletes[0].target.text == "y");
  const auto& nm = op.examples.at(1);
  CHECK(nm.rejected_by == dsl::stage::internal);
  REQUIRE(nm.graph.inputs.size() == 2);
  CHECK(!nm.graph.inputs[0].tensor);
  CHECK(nm.graph.inputs[1].tensor);
  CHECK(nm.graph.inputs[1].dims.empty());
  CHECK(nm.graph.inputs[1].attrs.size() == 2);
}

TEST_CASE("the diagnostic printer's exact format") {
  std::string const text =
      "tfg 1\n"
      "// printer fixture\n"
      "operator foo\n"
      "  object operator  primitive insertion  origin tfg\n"
      "  anchor %x\n"
      "{\n"
      "  pattern { %y = aten::relu(%x) }\n"
      "  example match { graph(%a: f32[2]): %y = aten::relu(%a) return (%y) }\n"
      "  example no_match rejected_by(pattern) { graph(): return () }\n"
      "  // the replacement below reads a value nobody bound\n"
      "  // (it should be %y)\n"
      "  replace { %c = aten::clone(%z, none) }\n"
      "}\n";
  const auto r = dsl::parse(text, "ops/foo.tfg");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].code == "E012");
  CHECK(r.format_diagnostics() ==
        "ops/foo.tfg:12:30: error[E012]: unbound value '%z' in replacement\n"
        "   12 |   replace { %c = aten::clone(%z, none) }\n"
        "      |                              ^~\n"
        "note: values bound by the pattern: %x, %y\n");

  // A note with a position gets its own snippet; tabs are kept so the caret lines up;
  // columns count code points; a span is clipped at the end of its line.
  dsl::source_file const src{"u.tfg", "tfg 1\n\t// \xc3\xa9t\xc3\xa9\n\tabc defgh\n"};
  dsl::line_index const lines(src.text);
  dsl::diagnostic d = dsl::make_error(dsl::errc::unknown_name, lines.locate(21, 40), "unknown name 'defgh'",
                                      {{"see here", lines.locate(7, 2)}, {"plain note", std::nullopt}});
  CHECK(d.loc.line == 3);
  CHECK(d.loc.col == 6);
  CHECK(dsl::format(d, src) ==
        "u.tfg:3:6: error[E044]: unknown name 'defgh'\n"
        "    3 | \tabc defgh\n"
        "      | \t    ^~~~~\n"
        "u.tfg:2:2: note: see here\n"
        "    2 | \t// \xc3\xa9t\xc3\xa9\n"
        "      | \t^~\n"
        "note: plain note\n");
  CHECK(lines.locate(12, 1).col == 6);  // after "\t// \xc3\xa9": 5 characters, 6 bytes
}

TEST_CASE("syntax errors name what was expected and the parser recovers") {
  const auto r = dsl::parse(
      "tfg 1\n"
      "operator a object tensor { param $k : int in [1 8] }\n"
      "operator b object tensor { replace { %c = aten::clone(%x, none) rewire consumers(%x) %c } }\n"
      "operator c object tensor { require inptu { } }\n",
      "r.tfg");
  REQUIRE(r.diagnostics.size() == 3);
  CHECK(r.diagnostics[0].message == "expected ',', found '8'");
  CHECK(r.diagnostics[1].message == "expected '->', found '%c'");
  CHECK(r.diagnostics[2].message == "expected 'input', 'internal' or 'output', found 'inptu'");
  for (const auto& d : r.diagnostics) CHECK(d.code == "E001");
  CHECK(r.diagnostics[2].loc.line == 4);
  CHECK(!r.ok());
}

TEST_CASE("parse_options::run_checks = false stops after the parse phase") {
  std::string const text = "tfg 1\noperator t { replace { %c = aten::clone(%z, none) } }\n";
  const auto unchecked = dsl::parse(text, "t.tfg", {.run_checks = false});
  CHECK(unchecked.ok());
  CHECK(unchecked.ast.operators.size() == 1);
  const auto checked = dsl::parse(text, "t.tfg");
  CHECK(!checked.ok());
}

TEST_CASE("float domain values are told apart by their exact value") {
  // 1e-40 and 1e-41 (float32 denormals) are not 0.0, and -0.0 is a value of its own.
  std::string const text =
      "tfg 1\noperator t object tensor primitive update origin tfg anchor %x {\n"
      "  param $v in {0.0, -0.0, 1e-40, 1e-41, 1e30}\n"
      "  replace { %z = aten::mul(%x, $v) rewire consumers(%x) -> %z }\n"
      "}\n";
  const auto r = dsl::parse(text, "t.tfg");
  for (const auto& d : r.diagnostics) CHECK_MESSAGE(d.code != "E018", d.message);
}

TEST_CASE("check() runs on a module built in code") {
  dsl::module m;
  dsl::operator_decl op;
  op.name.text = "built";
  op.object = dsl::object_kind::tensor;
  op.primitive = dsl::primitive_kind::insertion;
  op.origin = dsl::origin_info{};
  op.anchor = dsl::symbol{"x", {}};
  dsl::replace_block rep;
  dsl::ir_node n;
  n.results.push_back({"c", {}});
  n.op.names.push_back({"aten::clone", {}});
  dsl::expr arg;
  arg.kind = dsl::expr_kind::value;
  arg.text = "x";
  n.args.push_back(arg);
  rep.nodes.push_back(n);
  op.replace = rep;
  m.operators.push_back(op);
  const auto ds = dsl::check(m);
  std::vector<std::string> codes;
  for (const auto& d : ds) codes.push_back(d.code);
  CHECK(codes == std::vector<std::string>{"E022", "E023"});
  CHECK(m.operators[0].replace->nodes[0].args[0].resolved == dsl::type{dsl::type_kind::tensor, false});
}

TEST_CASE("dsl/spec.md documents every built-in, helper, literal and input attribute") {
  const auto spec = spec_text();
  for (const auto& b : dsl::builtins) {
    INFO("built-in " << b.name);
    CHECK(spec.find("| `" + std::string(b.signature) + "` |") != std::string::npos);
  }
  for (const auto& h : dsl::helpers) {
    INFO("helper " << h.name);
    CHECK(spec.find("| `" + std::string(h.signature) + "` |") != std::string::npos);
  }
  for (const auto& l : dsl::literals) {
    INFO("literal " << l.name);
    CHECK(spec.find("`" + std::string(l.name) + "`") != std::string::npos);
  }
  for (const auto& a : dsl::input_attrs) {
    INFO("attribute " << a.name);
    CHECK(spec.find("| `" + std::string(a.name) + "` |") != std::string::npos);
  }
}

TEST_CASE("parse never throws and never fails internally on mutated input") {
  // A corpus of valid and invalid files, mutated by deletions, insertions of tokens and
  // random bytes, duplications and truncations; a fixed seed keeps the run reproducible.
  std::vector<std::string> corpus;
  for (const auto& b : tfg_test::fenced_blocks(spec_text(), "tfg")) corpus.push_back(b.text);
  for (const auto& f : tfg_test::files_with_extension(tfg_test::source_dir() / "operators", ".tfg"))
    corpus.push_back(tfg_test::read_file(f));
  for (const auto& f : tfg_test::files_with_extension(tfg_test::source_dir() / "tests" / "dsl" / "must_fail", ".tfg"))
    corpus.push_back(tfg_test::read_file(f));
  REQUIRE(!corpus.empty());

  static const char* const tokens[] = {"{",
                                       "}",
                                       "(",
                                       ")",
                                       "[",
                                       "]",
                                       ",",
                                       ";",
                                       "%x",
                                       "%",
                                       "$k",
                                       "$",
                                       "aten::relu",
                                       "::",
                                       "\"",
                                       "//",
                                       "///",
                                       "-",
                                       "->",
                                       "...",
                                       "_",
                                       "*",
                                       "|",
                                       "==",
                                       "!",
                                       "&&",
                                       "0",
                                       "-1",
                                       "1e999",
                                       "99999999999999999999",
                                       "1.",
                                       "\n",
                                       " ",
                                       "operator",
                                       "extern",
                                       "require input {",
                                       "replace {",
                                       "pattern {",
                                       "example match {",
                                       "graph(",
                                       "return",
                                       "rewire",
                                       "delete",
                                       "consumers(%x)",
                                       "param $k : int in [1, 8]",
                                       "in",
                                       "tfg 1",
                                       "\t",
                                       "\r\n",
                                       "\xc3\xa9",
                                       "\xff",
                                       "\x80"};
  std::mt19937 rng(20240611u);
  auto pick = [&](std::size_t n) {
    return n == 0 ? std::size_t{0} : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };

  const int iterations = 3000;
  int internal_errors = 0;
  for (int it = 0; it < iterations; ++it) {
    std::string s = corpus[pick(corpus.size())];
    const int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits; ++e) {
      std::size_t const at = pick(s.size() + 1);
      switch (pick(6)) {
        case 0: s.erase(at, pick(16) + 1); break;
        case 1: s.insert(at, tokens[pick(std::size(tokens))]); break;
        case 2: s.insert(at, 1, static_cast<char>(pick(256))); break;
        case 3: {
          std::size_t const len = pick(40);
          if (at + len <= s.size()) s.insert(pick(s.size() + 1), s.substr(at, len));
          break;
        }
        case 4: s.resize(at); break;
        default:
          if (at < s.size()) s[at] = tokens[pick(std::size(tokens))][0];
      }
    }
    const auto r = dsl::parse(s, "fuzz.tfg");  // noexcept: a throw would terminate the test
    for (const auto& d : r.diagnostics) {
      if (d.code == "E000") ++internal_errors;
      CHECK(d.loc.offset <= s.size());
      CHECK(d.loc.offset + d.loc.len <= s.size());
    }
    if (it % 100 == 0) CHECK(!r.format_diagnostics().empty() == !r.diagnostics.empty());
  }
  // Random printable garbage and empty input, too.
  for (int it = 0; it < 200; ++it) {
    std::string s;
    for (std::size_t i = pick(200); i > 0; --i) s += static_cast<char>(32 + pick(95));
    for (const auto& d : dsl::parse(s, "garbage.tfg").diagnostics) internal_errors += d.code == "E000";
  }
  CHECK(dsl::parse("", "empty.tfg").diagnostics.size() == 1);  // E004
  CHECK(internal_errors == 0);
}

namespace {

/// A one-operator text whose input constraint is `cond`.
std::string with_condition(const std::string& cond) {
  return "tfg 1\noperator t object tensor primitive insertion origin tfg anchor %x {\n  require input { " + cond +
         " }\n  replace { %c = aten::clone(%x, none) }\n}\n";
}

std::vector<std::string> codes_of(const dsl::parse_result& r) {
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics) out.push_back(d.code);
  return out;
}

}  // namespace

TEST_CASE("hostile nesting is E007, not a stack overflow") {
  // Each of these crashed the parser (SIGSEGV in the unary rule) or a recursive tree walk.
  for (std::string const prefix : {"- ", "!", "-", "! "}) {
    std::string cond;
    for (int i = 0; i < 10000; ++i) cond += prefix;
    cond += prefix[0] == '!' ? "(rank(%x) == 1)" : "rank(%x) == 1";
    const auto r = dsl::parse(with_condition(cond), "prefix.tfg");
    INFO("prefix '" << prefix << "'");
    CHECK(codes_of(r) == std::vector<std::string>{"E007"});
    REQUIRE(!r.diagnostics.empty());
    CHECK(r.diagnostics.front().loc.line == 3);
  }
  // Brackets and prefix operators count together: 40 `-(` pairs are 80 levels.
  std::string mixed;
  for (int i = 0; i < 40; ++i) mixed += "-(";
  mixed += "1";
  for (int i = 0; i < 40; ++i) mixed += ")";
  CHECK(codes_of(dsl::parse(with_condition(mixed + " == 1"), "mixed.tfg")) == std::vector<std::string>{"E007"});

  // A 100,000-term chain: one E007 (not one per term), and nothing deeper than the bound is built.
  std::string chain = "rank(%x) == 1";
  for (int i = 1; i < 100000; ++i) chain += " && rank(%x) == 1";
  const auto r = dsl::parse(with_condition(chain), "chain.tfg");
  CHECK(codes_of(r) == std::vector<std::string>{"E007"});
}

TEST_CASE("nesting within the bounds parses and checks cleanly") {
  std::string prefix;
  for (int i = 0; i < 30; ++i) prefix += "!!";  // 60 levels inside the require block's braces
  const auto a = dsl::parse(with_condition(prefix + "(rank(%x) == 1)"), "ok.tfg", {.run_checks = false});
  CHECK(a.diagnostics.empty());

  std::string chain = "rank(%x) == 1";
  for (int i = 1; i < 500; ++i) chain += " && rank(%x) == 1";
  const auto b = dsl::parse(with_condition(chain), "ok.tfg", {.run_checks = false});
  CHECK(b.diagnostics.empty());
  REQUIRE(b.ast.operators.size() == 1);
  const auto& req = b.ast.operators.front().require_input;
  REQUIRE(req.has_value());
  REQUIRE(req->conditions.size() == 1);
  CHECK(req->conditions.front().height == 502);  // 499 '&&' over comparisons of height 3 (==, rank(), %x)
}

TEST_CASE("columns count code points at the end of a long line") {
  // Columns come from checkpoints every 64 bytes: check one far along a line with multi-byte text.
  std::string text = "tfg 1\n// ";
  for (int i = 0; i < 500; ++i) text += "\xc3\xa9";  // 500 x U+00E9, two bytes each
  text += " x\noperator\n";
  const auto r = dsl::parse(text, "cols.tfg");
  REQUIRE(!r.diagnostics.empty());
  dsl::line_index const idx(text);
  const auto at = idx.locate(static_cast<std::uint32_t>(text.find(" x\n") + 1), 1);
  CHECK(at.line == 2);
  CHECK(at.col == 3 + 500 + 1 + 1);  // "// ", the 500 code points, the blank, then x
}

}  // namespace tfg_test_dsl_parse
