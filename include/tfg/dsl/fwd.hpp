#pragma once
/// \file
/// Forward declarations of the DSL front end's public types.

namespace tfg::dsl {

struct source_loc;
struct source_file;
class line_index;

struct type;
struct expr;
struct symbol;
struct op_spec;
struct ir_node;
struct pattern_block;
struct rewire_stmt;
struct delete_stmt;
struct replace_block;
struct constraint_block;
struct param_decl;
struct graph_attr;
struct graph_input;
struct example_graph;
struct example_block;
struct origin_info;
struct value_claim;
struct operator_decl;
struct extern_decl;
struct module;

struct note;
struct diagnostic;
struct error_code_info;

struct parse_options;
struct parse_result;

}  // namespace tfg::dsl
