"""Three abstracts (transformers, offline RL, optimisation theory) that the service tests send."""

from __future__ import annotations

ABSTRACTS = [
    "We propose a sparse attention mechanism for transformers that reduces the quadratic cost of "
    "self-attention on long sequences while matching dense attention on language modeling benchmarks.",
    "We study offline reinforcement learning and derive a conservative policy gradient method that avoids "
    "overestimating the value of out-of-distribution actions.",
    "We prove convergence rates for stochastic gradient descent on non-convex objectives that satisfy the "
    "Polyak-Lojasiewicz inequality, and show the rates are tight.",
]
