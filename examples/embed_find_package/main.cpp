// Builds a small Tensor Flow Graph with the generic core, rewrites it, and prints it as DOT.
#include <tfg/graph.hpp>

#include <iostream>
#include <string>

int main() {
  tfg::graph::flow_graph<std::string, std::string> g;
  auto x = g.add_input("x");
  auto a = g.add_node("relu", {x}, {"a"});
  auto b = g.add_node("sigmoid", {x}, {"b"});
  auto c = g.add_node("add", {g.outputs(a)[0], g.outputs(b)[0]}, {"c"});
  g.add_output(g.outputs(c)[0]);

  // Replace relu by gelu: a bounded one-node rewrite.
  auto rw = g.begin_rewrite();
  rw.remove_node(a);
  auto gelu = rw.new_node("gelu", {x}, {"a2"});
  rw.replace_uses(g.outputs(a)[0], rw.output(gelu, 0));
  if (auto r = rw.commit(); !r) {
    std::cerr << "rewrite rejected\n";
    return 1;
  }
  tfg::graph::write_dot(
      std::cout, g, [&](tfg::graph::node_id n) { return g.data(n); }, [&](tfg::graph::edge_id e) { return g.data(e); });
  return g.check().empty() ? 0 : 1;
}
