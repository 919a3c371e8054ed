"""Max-flow / min-cut (Edmonds-Karp) over a small directed graph with integer capacities."""
from __future__ import annotations

from collections import deque

INF = float("inf")


class FlowGraph:
    def __init__(self):
        self.cap: dict = {}
        self.adj: dict = {}

    def add_edge(self, u, v, capacity) -> None:
        self.adj.setdefault(u, set()).add(v)
        self.adj.setdefault(v, set()).add(u)
        self.cap[(u, v)] = self.cap.get((u, v), 0) + capacity
        self.cap.setdefault((v, u), 0)

    def min_cut(self, source, sink):
        """Return (flow value, set of nodes on the source side of a minimum cut)."""
        flow = 0
        residual = dict(self.cap)
        while True:
            parent = {source: None}
            q = deque([source])
            while q and sink not in parent:
                u = q.popleft()
                for v in self.adj.get(u, ()):
                    if v not in parent and residual[(u, v)] > 0:
                        parent[v] = u
                        q.append(v)
            if sink not in parent:
                break
            path, v = [], sink
            while parent[v] is not None:
                path.append((parent[v], v))
                v = parent[v]
            push = min(residual[e] for e in path)
            if push == INF:
                raise ValueError("min_cut: infinite capacity path from source to sink")
            for u, v in path:
                residual[(u, v)] -= push
                residual[(v, u)] += push
            flow += push
        reach = {source}
        q = deque([source])
        while q:
            u = q.popleft()
            for v in self.adj.get(u, ()):
                if v not in reach and residual[(u, v)] > 0:
                    reach.add(v)
                    q.append(v)
        return flow, reach
