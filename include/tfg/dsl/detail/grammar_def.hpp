#pragma once
/// \file
/// The X3 grammar of the mutation DSL (dsl/spec.md section 2 is its EBNF). Nodes are built by
/// semantic actions that call the plain helpers of parse_state.hpp; every rule and every
/// expectation target carries a readable name, which becomes "expected <name>" in E001.

#include <boost/fusion/include/at_c.hpp>
#include <boost/spirit/home/x3.hpp>

#include "tfg/dsl/detail/ast_adapted.hpp"
#include "tfg/dsl/detail/config.hpp"
#include "tfg/dsl/detail/grammar.hpp"
#include "tfg/dsl/detail/parse_state.hpp"

namespace tfg::dsl::detail::parser {

// ---- parser building blocks --------------------------------------------------------------

/// A keyword: the word, not followed by an identifier character. `what()` is `'word'`.
struct keyword_parser : x3::parser<keyword_parser> {
  using attribute_type = x3::unused_type;
  static const bool has_attribute = false;
  const char* word;
  constexpr explicit keyword_parser(const char* w) : word(w) {}

  template <class It, class Ctx, class RCtx, class Attr>
  bool parse(It& first, const It& last, const Ctx& ctx, RCtx&, Attr&) const {
    x3::skip_over(first, last, ctx);
    It i = first;
    for (const char* w = word; *w; ++w, ++i)
      if (i == last || *i != *w) return false;
    if (i != last && is_ident_char(*i)) return false;
    first = i;
    return true;
  }
};
constexpr keyword_parser kw(const char* w) { return keyword_parser(w); }

/// Gives a parser a readable name for "expected ..." messages; otherwise transparent.
template <class Subject>
struct named_parser : x3::unary_parser<Subject, named_parser<Subject>> {
  using base_type = x3::unary_parser<Subject, named_parser<Subject>>;
  static const bool is_pass_through_unary = true;
  static const bool handles_container = Subject::handles_container;
  const char* name;
  constexpr named_parser(const Subject& s, const char* n) : base_type(s), name(n) {}

  template <class It, class Ctx, class RCtx, class Attr>
  bool parse(It& first, const It& last, const Ctx& ctx, RCtx& rctx, Attr& attr) const {
    return this->subject.parse(first, last, ctx, rctx, attr);
  }
};
template <class P>
constexpr auto named(const char* name, P const& p) {
  using subject = typename x3::extension::as_parser<P>::value_type;
  return named_parser<subject>(x3::as_parser(p), name);
}

}  // namespace tfg::dsl::detail::parser

namespace boost::spirit::x3 {
template <>
struct get_info<tfg::dsl::detail::parser::keyword_parser> {
  using result_type = std::string;
  std::string operator()(const tfg::dsl::detail::parser::keyword_parser& p) const {
    return std::string("'") + p.word + "'";
  }
};
// Expectation messages name what was expected; an action or a directive is named after the
// parser it wraps (X3's default would be a mangled type name).
template <class S, class A>
struct get_info<action<S, A>> {
  using result_type = std::string;
  std::string operator()(const action<S, A>& p) const { return what(p.subject); }
};
template <class S>
struct get_info<raw_directive<S>> {
  using result_type = std::string;
  std::string operator()(const raw_directive<S>& p) const { return what(p.subject); }
};
template <class S>
struct get_info<tfg::dsl::detail::parser::named_parser<S>> {
  using result_type = std::string;
  std::string operator()(const tfg::dsl::detail::parser::named_parser<S>& p) const { return p.name; }
};
}  // namespace boost::spirit::x3

namespace tfg::dsl::detail::parser {

using boost::fusion::at_c;
using x3::_attr;
using x3::_val;
using x3::lit;

template <class Ctx>
parse_state& state(const Ctx& c) {
  return x3::get<state_tag>(c);
}

inline const auto ident_start = x3::char_("a-zA-Z_");
inline const auto ident_char = x3::char_("a-zA-Z0-9_");
inline const auto value_char = x3::char_("a-zA-Z0-9_.");
inline const auto digit = x3::char_("0-9");
inline const auto ident_lexeme = x3::lexeme[ident_start >> *ident_char];

// ---- generic actions -----------------------------------------------------------------------

/// `_val.loc = <span of the raw[] range>`
inline const auto set_loc = [](auto& c) { _val(c).loc = state(c).loc(_attr(c)); };
/// `_val = <attribute>`
inline const auto assign = [](auto& c) { _val(c) = std::move(_attr(c)); };
/// `_val.push_back(<attribute>)`
inline const auto push = [](auto& c) { _val(c).push_back(std::move(_attr(c))); };

template <class Range>
std::string text_of(const Range& r, std::size_t drop_front = 0) {
  return std::string(r.begin() + static_cast<std::ptrdiff_t>(drop_front), r.end());
}

// ---- rules ---------------------------------------------------------------------------------

inline const x3::rule<class sym_class, symbol> sym = "identifier";
inline const x3::rule<class value_sym_class, symbol> value_sym = "value name ('%name')";
inline const x3::rule<class param_sym_class, symbol> param_sym = "parameter name ('$name')";
inline const x3::rule<class op_sym_class, symbol> op_sym = "op name ('ns::name')";

inline const x3::rule<class number_class, expr> number = "number";
inline const x3::rule<class string_class, expr> string_e = "string";
inline const x3::rule<class value_e_class, expr> value_e = "value";
inline const x3::rule<class param_e_class, expr> param_e = "parameter";
inline const x3::rule<class op_e_class, expr> op_e = "op name";
inline const x3::rule<class wildcard_class, expr> wildcard_e = "'_'";
inline const x3::rule<class ellipsis_class, expr> ellipsis_e = "'...'";
inline const x3::rule<class paren_class, expr> paren_e = "parenthesized expression";
inline const x3::rule<class list_class, expr> list_e = "list";
inline const x3::rule<class set_class, expr> set_e = "set";
inline const x3::rule<class call_class, expr> call_e = "call";
inline const x3::rule<class name_class, expr> name_e = "name";
inline const x3::rule<class primary_class, expr> primary = "expression";
inline const x3::rule<class postfix_class, expr> postfix = "expression";
inline const x3::rule<class unary_class, expr> unary = "expression";
inline const x3::rule<class mul_op_class, op_code> mul_op = "operator";
inline const x3::rule<class add_op_class, op_code> add_op = "operator";
inline const x3::rule<class cmp_op_class, op_code> cmp_op = "operator";
inline const x3::rule<class multiplicative_class, expr> multiplicative = "expression";
inline const x3::rule<class additive_class, expr> additive = "expression";
inline const x3::rule<class comparison_class, expr> comparison = "expression";
inline const x3::rule<class conjunction_class, expr> conjunction = "expression";
inline const x3::rule<class expression_class, expr> expression = "expression";
inline const x3::rule<class arg_list_class, std::vector<expr>> arg_list = "argument list";

inline const x3::rule<class results_class, std::vector<symbol>> results = "result values";
inline const x3::rule<class op_spec_class, op_spec> op_spec_r =
    "op name (e.g. aten::relu), alternatives 'a|b', '*' or '$param'";
inline const x3::rule<class ir_node_class, ir_node> ir_node_r = "node ('%v = op(args)')";
inline const x3::rule<class pattern_node_class, ir_node> pattern_node = "pattern node";

inline const x3::rule<class param_class, param_decl> param_r = "parameter declaration";
inline const x3::rule<class pattern_class, pattern_block> pattern_r = "pattern block";
inline const x3::rule<class rewire_class, rewire_stmt> rewire_r = "rewire statement";
inline const x3::rule<class delete_class, delete_stmt> delete_r = "delete statement";
inline const x3::rule<class replace_class, replace_block> replace_r = "replace block";
inline const x3::rule<class require_class, constraint_block> require_r = "require block";
inline const x3::rule<class graph_attr_class, graph_attr> graph_attr_r = "input attribute";
inline const x3::rule<class graph_input_class, graph_input> graph_input_r = "graph input ('%a: f32[2,3]')";
inline const x3::rule<class graph_class, example_graph> graph_r = "example graph";
inline const x3::rule<class example_class, example_block> example_r = "example block";
inline const x3::rule<class tolerance_class, raw_tolerance> tolerance_r =
    "tolerance ('atol=<number>' or 'rtol=<number>')";
inline const x3::rule<class header_clause_class, raw_clause> header_clause = "header clause";

inline const x3::rule<class req_arg_class, requirement_arg> req_arg_r =
    "requirement argument ('%v', '%v?', '%v[]', '$p', '_' or '...')";
inline const operator_rule_type operator_r = "operator declaration";
inline const requirement_rule_type requirement_r = "requirement declaration";
inline const extern_rule_type extern_r = "extern declaration";

// ---- lexical -------------------------------------------------------------------------------

inline const auto sym_def = x3::raw[ident_lexeme][([](auto& c) {
  _val(c) = symbol{text_of(_attr(c)), state(c).loc(_attr(c))};
})];
inline const auto value_sym_def = x3::raw[x3::lexeme['%' >> +value_char]][([](auto& c) {
  _val(c) = symbol{text_of(_attr(c), 1), state(c).loc(_attr(c))};
})];
inline const auto param_sym_def = x3::raw[x3::lexeme['$' >> ident_start >> *ident_char]][([](auto& c) {
  _val(c) = symbol{text_of(_attr(c), 1), state(c).loc(_attr(c))};
})];
inline const auto op_sym_def =
    x3::raw[x3::lexeme[ident_start >> *ident_char >> "::" >> ident_start >> *ident_char]][([](auto& c) {
      _val(c) = symbol{text_of(_attr(c)), state(c).loc(_attr(c))};
    })];

// ---- expressions ---------------------------------------------------------------------------

inline const auto number_def =
    x3::raw[x3::lexeme[+digit >> -('.' >> +digit) >> -(x3::char_("eE") >> -(lit('+') | lit('-')) >> +digit) >>
                       !ident_start]][([](auto& c) {
      auto& st = state(c);
      _val(c) = make_number(text_of(_attr(c)), st.loc(_attr(c)), st);
    })];
inline const auto string_e_def =
    x3::raw[x3::lexeme['"' >> *(('\\' >> x3::char_) | (x3::char_ - '"' - '\\' - x3::eol)) >> '"']][([](auto& c) {
      _val(c) = make_leaf(expr_kind::string_literal, decode_string(text_of(_attr(c))), state(c).loc(_attr(c)));
    })];
inline const auto value_e_def =
    value_sym[([](auto& c) { _val(c) = make_leaf(expr_kind::value, std::move(_attr(c).text), _attr(c).loc); })];
inline const auto param_e_def =
    param_sym[([](auto& c) { _val(c) = make_leaf(expr_kind::param, std::move(_attr(c).text), _attr(c).loc); })];
inline const auto op_e_def =
    op_sym[([](auto& c) { _val(c) = make_leaf(expr_kind::op_name, std::move(_attr(c).text), _attr(c).loc); })];
inline const auto name_e_def =
    sym[([](auto& c) { _val(c) = make_leaf(expr_kind::name, std::move(_attr(c).text), _attr(c).loc); })];
inline const auto wildcard_e_def =
    x3::raw[x3::lexeme['_' >> !ident_char]]
           [([](auto& c) { _val(c) = make_leaf(expr_kind::wildcard, "_", state(c).loc(_attr(c))); })];
inline const auto ellipsis_e_def =
    x3::raw[lit("...")][([](auto& c) { _val(c) = make_leaf(expr_kind::ellipsis, "...", state(c).loc(_attr(c))); })];
inline const auto paren_e_def = x3::raw['(' > expression[assign] > ')'][set_loc];

inline const auto push_arg = [](auto& c) {
  _val(c).height = std::max(_val(c).height, _attr(c).height + 1);
  _val(c).args.push_back(std::move(_attr(c)));
};
inline const auto list_e_def = x3::raw[lit('[')[([](auto& c) { _val(c) = make_leaf(expr_kind::list, "", {}); })] >
                                       -(expression[push_arg] % ',') > ']'][set_loc];
inline const auto set_e_def = x3::raw[lit('{')[([](auto& c) { _val(c) = make_leaf(expr_kind::set, "", {}); })] >
                                      -(expression[push_arg] % ',') > '}'][set_loc];
inline const auto arg_list_def = -(expression[push] % ',');
inline const auto call_e_def =
    x3::raw[(sym >> '(')[([](auto& c) { _val(c) = make_leaf(expr_kind::call, std::move(_attr(c).text), {}); })] >
            arg_list[([](auto& c) {
              _val(c).args = std::move(_attr(c));
              _val(c).height = height_over(_val(c).args);
            })] > ')'][set_loc];

inline const auto primary_def =
    number | string_e | value_e | param_e | wildcard_e | ellipsis_e | paren_e | list_e | set_e | op_e | call_e | name_e;

inline const auto postfix_def = primary[assign] >> *((lit('[') > expression > ']')[([](auto& c) {
                                  auto& st = state(c);
                                  expr e;
                                  e.kind = expr_kind::index;
                                  e.loc = st.through(st.span(_val(c).loc, _attr(c).loc), ']');
                                  e.args.push_back(std::move(_val(c)));
                                  e.args.push_back(std::move(_attr(c)));
                                  e.height = height_over(e.args);
                                  _val(c) = std::move(e);
                                })]);

inline const auto unary_def =
    x3::raw[lit('!') > unary[([](auto& c) {
              expr e;
              e.kind = expr_kind::unary;
              e.op = op_code::logical_not;
              e.height = _attr(c).height + 1;
              e.args.push_back(std::move(_attr(c)));
              _val(c) = std::move(e);
            })]][set_loc] |
    x3::raw[(lit('-') >> !lit('>')) > unary[([](auto& c) { _val(c) = make_negation(std::move(_attr(c))); })]][set_loc] |
    postfix[assign];

template <op_code Op>
inline const auto set_op = [](auto& c) { _val(c) = Op; };

inline const auto mul_op_def = lit('*')[set_op<op_code::mul>] | lit('/')[set_op<op_code::div>] |
                               x3::lexeme[lit('%') >> !value_char][set_op<op_code::mod>];
inline const auto add_op_def = lit('+')[set_op<op_code::add>] | x3::lexeme[lit('-') >> !lit('>')][set_op<op_code::sub>];
inline const auto cmp_op_def = lit("==")[set_op<op_code::eq>] | lit("!=")[set_op<op_code::ne>] |
                               lit("<=")[set_op<op_code::le>] | lit(">=")[set_op<op_code::ge>] |
                               lit('<')[set_op<op_code::lt>] | lit('>')[set_op<op_code::gt>] |
                               kw("in")[set_op<op_code::in>];

/// `_val = _val <op> rhs` for an attribute (op, rhs).
inline const auto fold_binary = [](auto& c) {
  auto& a = _attr(c);
  _val(c) = make_binary(at_c<0>(a), std::move(_val(c)), std::move(at_c<1>(a)), state(c));
};
template <op_code Op>
inline const auto fold_fixed =
    [](auto& c) { _val(c) = make_binary(Op, std::move(_val(c)), std::move(_attr(c)), state(c)); };

inline const auto multiplicative_def = unary[assign] >> *((mul_op > unary)[fold_binary]);
inline const auto additive_def = multiplicative[assign] >> *((add_op > multiplicative)[fold_binary]);
inline const auto comparison_def = additive[assign] >> -((cmp_op > additive)[fold_binary]);
inline const auto conjunction_def = comparison[assign] >> *((lit("&&") > comparison)[fold_fixed<op_code::logical_and>]);
inline const auto expression_def = conjunction[assign] >> *((lit("||") > conjunction)[fold_fixed<op_code::logical_or>]);

// ---- IR-shaped lines -----------------------------------------------------------------------

inline const auto results_def = value_sym[push] % ',';

inline const auto op_spec_r_def =
    x3::raw[lit('*')[([](auto& c) {
              _val(c) = op_spec{};
              _val(c).kind = op_spec_kind::any;
            })] |
            param_sym[([](auto& c) {
              _val(c) = op_spec{};
              _val(c).kind = op_spec_kind::param;
              _val(c).param = std::move(_attr(c));
            })] |
            (op_sym[([](auto& c) {
               _val(c) = op_spec{};
               _val(c).names.push_back(std::move(_attr(c)));
             })] >>
             *(lit('|') > op_sym[([](auto& c) { _val(c).names.push_back(std::move(_attr(c))); })]))][set_loc];

inline const auto node_results = [](auto& c) {
  _val(c) = ir_node{};
  _val(c).results = std::move(_attr(c));
};
inline const auto node_op = [](auto& c) { _val(c).op = std::move(_attr(c)); };
inline const auto node_args = [](auto& c) { _val(c).args = std::move(_attr(c)); };

/// Replacement and example lines: committed once the result list is read.
inline const auto ir_node_r_def =
    x3::raw[results[node_results] > lit('=') > op_spec_r[node_op] > '(' > arg_list[node_args] > ')'][set_loc];
/// Pattern lines: `%y = ...` or, failing the `=`, a condition such as `%x == %y`.
inline const auto pattern_node_def = x3::raw[(results[node_results] >> (lit('=') >> !lit('='))) > op_spec_r[node_op] >
                                             '(' > arg_list[node_args] > ')'][set_loc];

// ---- operator body -------------------------------------------------------------------------

inline const auto param_domain =
    named("parameter domain ('[lo, hi]' or '{a, b, ...}')",
          (lit('[')[([](auto& c) { _val(c).domain = domain_kind::range; })] >
           expression[([](auto& c) { _val(c).domain_values.push_back(std::move(_attr(c))); })] > ',' >
           expression[([](auto& c) { _val(c).domain_values.push_back(std::move(_attr(c))); })] > ']') |
              (lit('{')[([](auto& c) { _val(c).domain = domain_kind::set; })] >
               -(expression[([](auto& c) { _val(c).domain_values.push_back(std::move(_attr(c))); })] % ',') > '}'));

inline const auto param_r_def =
    x3::raw[kw("param") > param_sym[([](auto& c) {
              _val(c) = param_decl{};
              _val(c).name = std::move(_attr(c));
            })] > -(lit(':') > named("type name", sym)[([](auto& c) { _val(c).type_name = std::move(_attr(c)); })]) >
            -((kw("in") > param_domain) | ((lit('=') >> !lit('=')) > named("expression", expression)[([](auto& c) {
                                             _val(c).domain = domain_kind::range;
                                             _val(c).derived = true;
                                             _val(c).domain_values.push_back(_attr(c));
                                             _val(c).domain_values.push_back(std::move(_attr(c)));
                                           })]))][set_loc];

inline const auto pattern_r_def =
    x3::raw[kw("pattern")[([](auto& c) { _val(c) = pattern_block{}; })] > '{' >
            *((pattern_node[([](auto& c) { _val(c).nodes.push_back(std::move(_attr(c))); })] |
               expression[([](auto& c) { _val(c).conditions.push_back(std::move(_attr(c))); })]) >>
              -lit(';')) > named("pattern node, condition or '}'", lit('}'))][set_loc];

inline const auto rewire_r_def =
    x3::raw[kw("rewire")[([](auto& c) { _val(c) = rewire_stmt{}; })] >
            named("'consumers(%v)' or 'consumer(%v, i)'",
                  (kw("consumers") > '(' > value_sym[([](auto& c) {
                     _val(c).source = std::move(_attr(c));
                     _val(c).all = true;
                   })] > ')') |
                      (kw("consumer") > '(' > value_sym[([](auto& c) {
                         _val(c).source = std::move(_attr(c));
                         _val(c).all = false;
                       })] > ',' > expression[([](auto& c) { _val(c).which = std::move(_attr(c)); })] > ')')) >
            named("'->'", lit("->")) > value_sym[([](auto& c) { _val(c).target = std::move(_attr(c)); })]][set_loc];

inline const auto delete_r_def = x3::raw[kw("delete") > value_sym[([](auto& c) {
                                           _val(c) = delete_stmt{};
                                           _val(c).target = std::move(_attr(c));
                                         })]][set_loc];

inline const auto replace_r_def =
    x3::raw[kw("replace")[([](auto& c) { _val(c) = replace_block{}; })] > '{' >
            *((rewire_r[([](auto& c) { _val(c).rewires.push_back(std::move(_attr(c))); })] |
               delete_r[([](auto& c) { _val(c).deletes.push_back(std::move(_attr(c))); })] |
               ir_node_r[([](auto& c) { _val(c).nodes.push_back(std::move(_attr(c))); })]) >>
              -lit(';')) > named("replacement statement ('%v = op(...)', 'rewire', 'delete') or '}'", lit('}'))]
           [set_loc];

template <stage S>
inline const auto set_stage = [](auto& c) {
  _val(c) = constraint_block{};
  _val(c).which = S;
};
inline const auto require_r_def =
    x3::raw[kw("require") > named("'input', 'internal' or 'output'", kw("input")[set_stage<stage::input>] |
                                                                         kw("internal")[set_stage<stage::internal>] |
                                                                         kw("output")[set_stage<stage::output>]) > '{' >
            *(expression[([](auto& c) { _val(c).conditions.push_back(std::move(_attr(c))); })] >> -lit(';')) >
            named("condition or '}'", lit('}'))][set_loc];

// ---- examples ------------------------------------------------------------------------------

inline const auto graph_attr_r_def =
    x3::raw[named("attribute name", sym)[([](auto& c) {
              _val(c) = graph_attr{};
              _val(c).key = std::move(_attr(c));
            })] > -(lit('=') > expression[([](auto& c) { _val(c).value = std::move(_attr(c)); })])][set_loc];

inline const auto graph_input_r_def =
    x3::raw[value_sym[([](auto& c) {
              _val(c) = graph_input{};
              _val(c).name = std::move(_attr(c));
            })] > ':' > named("input type (e.g. 'f32[2,3]' or 'int')", sym)[([](auto& c) {
              _val(c).type_name = std::move(_attr(c));
            })] > -(lit('[')[([](auto& c) { _val(c).tensor = true; })] >
                    -(expression[([](auto& c) { _val(c).dims.push_back(std::move(_attr(c))); })] % ',') > ']') >
            -(lit('{') >
              named("attribute", graph_attr_r[([](auto& c) { _val(c).attrs.push_back(std::move(_attr(c))); })] % ',') >
              '}')][set_loc];

inline const auto graph_r_def =
    x3::raw[kw("graph")[([](auto& c) { _val(c) = example_graph{}; })] > '(' >
            -(graph_input_r[([](auto& c) { _val(c).inputs.push_back(std::move(_attr(c))); })] % ',') > ')' > ':' >
            *(ir_node_r[([](auto& c) { _val(c).nodes.push_back(std::move(_attr(c))); })] >> -lit(';')) >
            named("graph node or 'return'", kw("return")) > '(' >
            -(value_sym[([](auto& c) { _val(c).outputs.push_back(std::move(_attr(c))); })] % ',') > ')'][set_loc];

inline const auto example_r_def =
    x3::raw[kw("example")[([](auto& c) { _val(c) = example_block{}; })] >
            named("'match' or 'no_match'",
                  kw("match")[([](auto& c) { _val(c).match = true; })] |
                      (kw("no_match")[([](auto& c) { _val(c).match = false; })] > kw("rejected_by") > '(' >
                       named("stage ('pattern', 'input', 'internal' or 'output')", sym)[([](auto& c) {
                         _val(c).rejected_by = stage_of(_attr(c), state(c));
                       })] > ')')) > '{' > graph_r[([](auto& c) { _val(c).graph = std::move(_attr(c)); })] >
            -(kw("anchor") > value_sym[([](auto& c) { _val(c).anchor = std::move(_attr(c)); })]) >
            -(x3::raw[kw("expect")][([](auto& c) {
                _val(c).has_expect = true;
                _val(c).expect_loc = state(c).loc(_attr(c));
              })] > '{' > *(expression[([](auto& c) { _val(c).expect.push_back(std::move(_attr(c))); })] >> -lit(';')) >
              named("condition or '}'", lit('}'))) > named("'anchor', 'expect' or '}'", lit('}'))][set_loc];

// ---- operator header -----------------------------------------------------------------------

template <clause_kind K>
inline const auto clause_start = [](auto& c) {
  _val(c) = raw_clause{};
  _val(c).kind = K;
  _val(c).keyword = state(c).loc(_attr(c));
};
inline const auto clause_word = [](auto& c) { _val(c).word = std::move(_attr(c)); };
inline const auto header_keyword =
    kw("object") | kw("primitive") | kw("origin") | kw("preserves") | kw("anchor") | kw("requires");

inline const auto header_clause_def =
    x3::raw[(x3::raw[kw("object")][clause_start<clause_kind::object>] > named("object kind", sym)[clause_word]) |
            (x3::raw[kw("primitive")][clause_start<clause_kind::primitive>] >
             named("primitive kind", sym)[clause_word]) |
            (x3::raw[kw("origin")][clause_start<clause_kind::origin>] >
             named("origin ('cg <study>' or 'tfg')", sym)[clause_word] >
             -((!header_keyword >> sym)[([](auto& c) { _val(c).study = std::move(_attr(c)); })]) >
             -(string_e[([](auto& c) { _val(c).rule_id = std::move(_attr(c)); })])) |
            (x3::raw[kw("preserves")][clause_start<clause_kind::preserves>] > kw("values") >
             -(kw("within")[([](auto& c) { _val(c).within = true; })] >
               named("tolerance ('atol=<number>' or 'rtol=<number>')",
                     tolerance_r[([](auto& c) { _val(c).tolerances.push_back(std::move(_attr(c))); })] % ','))) |
            (x3::raw[kw("anchor")][clause_start<clause_kind::anchor>] > value_sym[clause_word]) |
            (x3::raw[kw("requires")][clause_start<clause_kind::requires_device>] >
             named("device ('cuda')", sym)[clause_word])][set_loc];

inline const auto tolerance_r_def = named("tolerance name", sym) > '=' > expression;

// ---- declarations --------------------------------------------------------------------------

inline const auto operator_r_def =
    kw("operator") > named("operator name", sym)[([](auto& c) {
      auto& st = state(c);
      st.seen.clear();
      _val(c) = operator_decl{};
      _val(c).name = std::move(_attr(c));
      _val(c).loc = st.span(st.loc(st.item_begin, st.item_begin + 8), _val(c).name.loc);
    })] > *(header_clause[([](auto& c) { fold_clause(_val(c), _attr(c), state(c)); })]) >
    named("header clause ('object', 'primitive', 'origin', 'preserves', 'anchor', 'requires') or '{'", lit('{')) >
    *(param_r[([](auto& c) { _val(c).params.push_back(std::move(_attr(c))); })] |
      pattern_r[([](auto& c) { fold_pattern(_val(c), std::move(_attr(c)), state(c)); })] |
      require_r[([](auto& c) { fold_require(_val(c), std::move(_attr(c)), state(c)); })] |
      replace_r[([](auto& c) { fold_replace(_val(c), std::move(_attr(c)), state(c)); })] |
      example_r[([](auto& c) { _val(c).examples.push_back(std::move(_attr(c))); })]) >
    named("'param', 'pattern', 'require', 'replace', 'example' or '}'", lit('}'));

inline const auto extern_r_def =
    x3::raw[kw("extern")[([](auto& c) { _val(c) = extern_decl{}; })] >
            named("'pred' or 'fn'", kw("pred")[([](auto& c) { _val(c).predicate = true; })] |
                                        kw("fn")[([](auto& c) { _val(c).predicate = false; })]) >
            named("extern name", sym)[([](auto& c) { _val(c).name = std::move(_attr(c)); })] > '(' >
            -(named("type name", sym)[([](auto& c) { _val(c).param_types.push_back(std::move(_attr(c))); })] % ',') >
            ')' > -(named("'->'", lit("->")) >
                    named("type name", sym)[([](auto& c) { _val(c).result_type = std::move(_attr(c)); })])][set_loc];

// ---- requirements R(v) ---------------------------------------------------------------------

template <req_arg_kind K>
inline const auto set_req_kind = [](auto& c) { _val(c).kind = K; };

inline const auto req_arg_r_def = x3::raw[(value_sym[([](auto& c) {
                                             _val(c) = requirement_arg{};
                                             _val(c).kind = req_arg_kind::tensor;
                                             _val(c).name = std::move(_attr(c));
                                           })] >>
                                           -(lit('?')[set_req_kind<req_arg_kind::optional_tensor>] |
                                             (lit('[') > ']')[set_req_kind<req_arg_kind::tensor_list>])) |
                                          param_sym[([](auto& c) {
                                            _val(c) = requirement_arg{};
                                            _val(c).kind = req_arg_kind::constant;
                                            _val(c).name = std::move(_attr(c));
                                          })] |
                                          x3::lexeme['_' >> !ident_char][([](auto& c) {
                                            _val(c) = requirement_arg{};
                                            _val(c).kind = req_arg_kind::ignore;
                                          })] |
                                          lit("...")[([](auto& c) {
                                            _val(c) = requirement_arg{};
                                            _val(c).kind = req_arg_kind::rest;
                                          })]][set_loc];

inline const auto requirement_r_def =
    x3::raw[kw("requirement")[([](auto& c) { _val(c) = requirement_decl{}; })] >
            named("op name ('ns::name')", op_sym)[([](auto& c) { _val(c).op = std::move(_attr(c)); })] > '(' >
            -(req_arg_r[([](auto& c) { _val(c).args.push_back(std::move(_attr(c))); })] % ',') > ')' >
            -(kw("propagates") > kw("nan") >
              named("NaN rule ('elementwise', 'preserve' or 'any')",
                    x3::raw[kw("elementwise") | kw("preserve") | kw("any")])[([](auto& c) {
                auto const& r = x3::_attr(c);  // the matched range
                _val(c).nan_rule.assign(r.begin(), r.end());
              })] > -(kw("from") > value_sym[([](auto& c) { _val(c).nan_from = std::move(_attr(c)); })])) > '{' >
            *(expression[([](auto& c) { _val(c).conditions.push_back(std::move(_attr(c))); })] >> -lit(';')) >
            named("condition or '}'", lit('}'))][set_loc];

BOOST_SPIRIT_DEFINE(sym, value_sym, param_sym, op_sym, number, string_e, value_e, param_e, op_e, wildcard_e, ellipsis_e,
                    paren_e, list_e, set_e, call_e, name_e, primary, postfix, unary, mul_op, add_op, cmp_op,
                    multiplicative, additive, comparison, conjunction, expression, arg_list, results, op_spec_r,
                    ir_node_r, pattern_node, param_r, pattern_r, rewire_r, delete_r, replace_r, require_r, graph_attr_r,
                    graph_input_r, graph_r, example_r, tolerance_r, header_clause, operator_r, extern_r, req_arg_r,
                    requirement_r)

}  // namespace tfg::dsl::detail::parser

namespace tfg::dsl::detail {
inline const parser::operator_rule_type& operator_grammar() { return parser::operator_r; }
inline const parser::extern_rule_type& extern_grammar() { return parser::extern_r; }
inline const parser::requirement_rule_type& requirement_grammar() { return parser::requirement_r; }
}  // namespace tfg::dsl::detail
