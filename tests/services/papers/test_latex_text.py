"""LaTeX in titles and abstracts shown as text: symbols, scripts, fonts; plain text left as written."""

from __future__ import annotations

import pytest

from bot.services.papers.latex_text import math_text, readable


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (r"a 2.2$\times$ speedup", "a 2.2× speedup"),
        (r"$\alpha$-divergence", "α-divergence"),
        (r"in $O(n^2)$ time", "in O(n²) time"),
        (r"\textit{Fast} and \emph{exact}", "Fast and exact"),
        (r"$\mathcal{O}(\sqrt{T})$ regret", "O(√T) regret"),
        (r"$x_{t+1}$ and $W^{\top}$", "xₜ₊₁ and Wᵀ"),
        (r"$\ell_p$ balls in $\mathbb{R}^d$", "ℓₚ balls in Rᵈ"),
        (r"$AUC_{PR}$", "AUC_PR"),  # no subscript capitals in Unicode: kept readable
        (r"$\tilde{O}(d^{-1/2})$", "Õ(d^(-1/2))"),
        (r"$\frac{1}{2}$ of it", "1/2 of it"),
        (r"$(\epsilon,\delta)$-DP", "(ε,δ)-DP"),
        (r"${\it LasF}$", "LasF"),
        (r"$\texttt{DSGT}$", "DSGT"),
        (r"$\sim$$30\%$ less", "∼30% less"),
        (r"$ C_W $ depends", "C_W depends"),
        (r"for $k \in \{2, 4\}$", "for k ∈ {2, 4}"),
        (r"$d\log T$", "d log T"),
        (r"x \& y, 5\% more", "x & y, 5% more"),
        ("``quoted''", "“quoted”"),
    ],
)
def test_latex_is_shown_as_text(raw: str, shown: str) -> None:
    assert readable(raw) == shown


@pytest.mark.parametrize(
    "plain",
    [
        "costs $5 and $10 a month",  # dollars, not math
        "improves by 5% over the rest",  # a LaTeX parser would read "%" as a comment and drop the rest
        "snake_case names and a_b",
        "KV-cache (with ~2x less memory)",
        "",
    ],
)
def test_plain_text_is_left_as_written(plain: str) -> None:
    assert readable(plain) == plain


def test_math_text_drops_sizes_and_spacing() -> None:
    assert math_text(r"\left( \frac{a+b}{c} \right)\,\cdot\, x") == "( (a+b)/c ) · x"
