"""The "How it works" text and the metric glossary, as Markdown for the app."""

from __future__ import annotations

from dropmatch.metrics import DEFINITIONS


def how_it_works(paper: str) -> str:
    """Speculative decoding, the K dropout paths, the criteria and the OR rule, with the formulas (KaTeX $$ blocks)."""
    return f"""
**Speculative decoding.** A small draft model proposes γ tokens d₁..d_γ with distributions q_j; the target verifies
them in **one** forward and gives, at each position, the final hidden state h_j and logits z_j = W h_j. The lossless
test (T = 0) accepts d_j while d_j = argmax z_j, then emits the target's correction, or a bonus token when all γ pass.

**DropMatch** ([arXiv 2603.03333]({paper})) adds K dropout paths **on the LM-head input only** (the hidden state,
not the weights), with no extra forward pass:

$$h_j^{{(i)}} = \\frac{{h_j \\odot m^{{(i)}}}}{{1-p_{{drop}}}},\\quad m^{{(i)}} \\sim \\text{{Bernoulli}}(1-p_{{drop}}),
\\quad p_j^{{(i)}} = \\text{{softmax}}(W h_j^{{(i)}})$$

$$\\bar p_j = \\text{{softmax}}\\Big(\\tfrac1K \\sum_i W h_j^{{(i)}}\\Big)
\\ \\text{{(centroid: mean of logits)}},\\qquad
\\text{{JS}}(P\\|Q) = \\tfrac12 \\text{{KL}}(P\\|M) + \\tfrac12 \\text{{KL}}(Q\\|M),
\\ M = \\tfrac{{P+Q}}2\\ \\text{{(nats)}}$$

- **naive**: accept d_j if it is the top-1 of any path.
- **js**: accept if JS(q_j ‖ p̄_j) ≤ max_i JS(p_j^(i) ‖ p̄_j): the draft lies inside the spread of the paths.
- **majority**: accept if d_j is the plurality top-1 of the K paths (strict: more than K/2 votes).
- **js+majority** (paper Algorithm 1, the default): js, else majority.

In **or** mode a token is accepted when the lossless test OR the criterion accepts it (with p_drop = 0 and greedy
decoding this is exactly lossless); **replace** uses the criterion alone. At temperature > 0 the path tokens are
*sampled*, so naive and majority relax even at p_drop = 0 (identical paths still draw different tokens).
Corrections and bonus tokens always come from the unmasked head.
The accepted prefix is the longest run of accepts. Paper defaults: K = 5, p_drop = 0.3. τ counts the bonus token.

**Its relatives** relax the same test without dropout paths, from the unmasked target p and the draft q alone; each has
one knob, runs through the same loop (OR with lossless by default) and can be picked in the criterion menu:
- **Fuzzy SD** (Holsman et al., 2025): accept when a divergence between p and q is under a threshold: JS(p‖q),
  KL(q‖p) or TV(p, q). It ignores which token was drafted.
- **Typical acceptance** (Medusa, Cai et al., 2024): accept when p(d) > min(ε, √ε·e^(−H(p))).
- **Target top-k**: accept when d is among the target's k most likely tokens.
- **MARS** (Song et al., 2026): where the target hesitates, z₂/z₁ > θ on its two largest logits, accept its second
  token.

The inspector lists what every rule would decide at the clicked draft, and the accept / reject map can be recoloured by
any rule: both come from the numbers the run recorded, so once a rule decides a position differently the rest of the
text would have differed. The Analysis tab compares the rules at equal speed (the matched-τ table) and on the quality
measures (length ratio λ, repetition loops, the cost of a relaxed acceptance log p(top-1) − log p(d), the target's
log-probability of the text, and pass@1 on HumanEval).
"""


def glossary() -> str:
    """Every metric name with its definition, as a Markdown list."""
    return "**Metric definitions**  \n" + "  \n".join(f"- `{k}`: {v}" for k, v in DEFINITIONS.items())
