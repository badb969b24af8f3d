// Downstream impact P: fraction of executed operators downstream of a boundary, cached.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "tfg/graph/flow_graph.hpp"
#include "tfg/select/impact.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_select_impact {

using tfg::graph::edge_id;
using tfg::graph::node_id;
using graph_t = tfg::graph::flow_graph<int, int>;
using tfg::select::downstream_impact_cache;

TEST_CASE("select/impact: P on a diamond with two profiling inputs") {
  // x -> a -> (b, c) -> d -> out;  e reads x only.
  graph_t g;
  const edge_id x = g.add_input(0);
  const node_id a = g.add_node(1, {x}, {1});
  const edge_id ea = g.outputs(a)[0];
  const node_id b = g.add_node(2, {ea}, {2});
  const node_id c = g.add_node(3, {ea}, {3});
  const node_id d = g.add_node(4, {g.outputs(b)[0], g.outputs(c)[0]}, {4});
  const node_id e = g.add_node(5, {x}, {5});
  g.add_output(g.outputs(d)[0]);

  // Input 0 runs everything; input 1 skips c (e.g. a data-dependent branch) and lists b twice.
  const std::vector<std::vector<node_id>> executed{{a, b, c, d, e}, {a, b, d, e, b}, {}};
  downstream_impact_cache<graph_t> p(g, executed);
  CHECK(p.inputs() == 2);  // the empty input is left out

  const std::vector<edge_id> at_a{ea};  // downstream: b, c, d
  CHECK(p(at_a) == doctest::Approx((3.0 / 5.0 + 2.0 / 4.0) / 2.0));
  const std::vector<edge_id> at_b{g.outputs(b)[0]};  // downstream: d
  CHECK(p(at_b) == doctest::Approx((1.0 / 5.0 + 1.0 / 4.0) / 2.0));
  const std::vector<edge_id> at_x{x};  // everything
  CHECK(p(at_x) == doctest::Approx(1.0));
  const std::vector<edge_id> at_out{g.outputs(d)[0]};  // nothing consumes the output
  CHECK(p(at_out) == 0.0);
  CHECK(p(std::span<const edge_id>{}) == 0.0);
  CHECK(p.cached() == 5);

  // Same boundary, other order and a duplicate: a cache hit with the same value.
  const std::vector<edge_id> bc{g.outputs(c)[0], g.outputs(b)[0], g.outputs(c)[0]};
  const double first = p(bc);
  CHECK(first == doctest::Approx((1.0 / 5.0 + 1.0 / 4.0) / 2.0));
  const std::vector<edge_id> cb{g.outputs(b)[0], g.outputs(c)[0]};
  CHECK(p(cb) == first);
  CHECK(p.cached() == 6);

  const std::vector<std::vector<node_id>> none;
  downstream_impact_cache<graph_t> q(g, none);
  CHECK(q(at_a) == 0.0);
}

TEST_CASE("select/impact: matches flow_graph::downstream on random DAGs") {
  std::mt19937 r(17);
  for (int trial = 0; trial < 20; ++trial) {
    graph_t g;
    std::vector<edge_id> edges{g.add_input(0), g.add_input(0)};
    for (int i = 0; i < 40; ++i) {
      std::vector<edge_id> in;
      const int k = 1 + static_cast<int>(r() % 3);
      for (int j = 0; j < k; ++j) in.push_back(edges[r() % edges.size()]);
      const node_id n = g.add_node(i, in, {i, i});
      for (edge_id e : g.outputs(n)) edges.push_back(e);
    }
    std::vector<std::vector<node_id>> executed(3);
    for (node_id n : g.nodes())
      for (auto& ex : executed)
        if (r() % 4 != 0) ex.push_back(n);
    downstream_impact_cache<graph_t> p(g, executed);
    for (int q = 0; q < 10; ++q) {
      const std::vector<edge_id> boundary{edges[r() % edges.size()], edges[r() % edges.size()]};
      boost::dynamic_bitset<> reach(g.node_capacity());
      for (edge_id e : boundary) reach |= g.downstream(e);
      double expected = 0;
      for (const auto& ex : executed) {
        std::size_t hit = 0;
        for (node_id n : ex) hit += reach.test(tfg::graph::index(n));
        expected += static_cast<double>(hit) / static_cast<double>(ex.size());
      }
      expected /= static_cast<double>(executed.size());
      CHECK(p(boundary) == doctest::Approx(expected));
    }
  }
}

}  // namespace tfg_test_select_impact
