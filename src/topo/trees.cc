// The tree algorithm's shape (topo.h, buildTrees). Pure like rings.cc: the same Topology gives the
// same trees on every rank.
#include <algorithm>
#include <vector>

#include "topo/topo.h"

namespace braid::topo {
namespace {

// The hosts in the order ring 0 visits them, each with its ranks in ring order.
std::vector<std::vector<int>> hostsInRingOrder(const Topology& topo) {
  const int n = topo.nranks;
  std::vector<std::vector<int>> hosts;
  for (int r : topo.rings[0]) {
    auto same = std::find_if(hosts.begin(), hosts.end(), [&](const std::vector<int>& h) {
      return topo.transport[h[0] * n + r] != TransportKind::kNet;
    });
    if (same == hosts.end()) {
      hosts.push_back({r});
    } else {
      same->push_back(r);
    }
  }
  return hosts;
}

// Parent of host h in a heap-ordered binary tree of `count` hosts, or its mirror image.
int parentHost(int h, int count, bool mirrored) {
  const int i = mirrored ? count - 1 - h : h;
  if (i == 0) return -1;
  const int p = (i - 1) / 2;
  return mirrored ? count - 1 - p : p;
}

void addChild(TreeLinks* links, int child) { links->children[links->nChildren++] = child; }

// NET and local edges from the root down to every rank, the worst of each.
void measureDepth(const std::vector<TreeLinks>& tree, const Topology& topo, int* netDepth, int* localDepth) {
  const int n = topo.nranks;
  for (int r = 0; r < n; ++r) {
    int net = 0;
    int local = 0;
    for (int x = r; tree[x].parent >= 0; x = tree[x].parent) {
      (topo.transport[x * n + tree[x].parent] == TransportKind::kNet ? net : local)++;
    }
    *netDepth = std::max(*netDepth, net);
    *localDepth = std::max(*localDepth, local);
  }
}

}  // namespace

void buildTrees(Topology* topo, bool oneHostToo) {
  topo->trees.clear();
  topo->treeNetDepth = 0;
  topo->treeLocalDepth = 0;
  if ((topo->nNodes < 2 && !oneHostToo) || topo->nranks < 2 || topo->rings.empty()) return;
  const std::vector<std::vector<int>> hosts = hostsInRingOrder(*topo);
  const int nHosts = static_cast<int>(hosts.size());
  for (int c = 0; c < topo->nChannels; ++c) {
    const bool mirrored = c % 2 == 1;
    std::vector<std::vector<int>> chains = hosts;
    for (std::vector<int>& chain : chains) {
      const int shift = (c / 2) % static_cast<int>(chain.size());
      std::rotate(chain.begin(), chain.begin() + shift, chain.end());
    }
    std::vector<TreeLinks> tree(topo->nranks);
    for (int h = 0; h < nHosts; ++h) {
      const std::vector<int>& chain = chains[h];
      for (size_t k = 1; k < chain.size(); ++k) {
        tree[chain[k]].parent = chain[k - 1];
        addChild(&tree[chain[k - 1]], chain[k]);
      }
    }
    // Host children after the chain child, in host order (both ends number the edges from it).
    for (int h = 0; h < nHosts; ++h) {
      const int p = parentHost(h, nHosts, mirrored);
      if (p < 0) continue;
      tree[chains[h][0]].parent = chains[p][0];
    }
    for (int h = 0; h < nHosts; ++h) {
      for (int child = 0; child < nHosts; ++child) {
        if (parentHost(child, nHosts, mirrored) == h) addChild(&tree[chains[h][0]], chains[child][0]);
      }
    }
    measureDepth(tree, *topo, &topo->treeNetDepth, &topo->treeLocalDepth);
    topo->trees.push_back(std::move(tree));
  }
}

}  // namespace braid::topo
