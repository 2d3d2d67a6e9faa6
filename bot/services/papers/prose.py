"""An abstract's prose as text to read: markup taken out (Markdown emphasis, LaTeX math and commands,
\\url{}) and sentences split where a reader would. Shared by the titles ingest derives
(`ingest.titles`) and the gist a digest shows (`gist`); neither depends on the other.
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------- markup


_GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "eta": "η",
    "theta": "θ",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "psi": "ψ",
    "omega": "ω",
    "Omega": "Ω",
    "Theta": "Θ",
    "Delta": "Δ",
    "Sigma": "Σ",
    "Psi": "Ψ",
    "Phi": "Φ",
    "ell": "ℓ",
    "infty": "∞",
    "sqrt": "√",
    "times": "×",
    "leq": "≤",
    "le": "≤",
    "geq": "≥",
    "ge": "≥",
    "subset": "⊂",
    "in": "∈",
    "log": "log",
}
_SUPERSCRIPT = str.maketrans("0123456789+-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻")


def _latex_math(math: str) -> str:
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"\1/\2", math)
    text = re.sub(
        r"\\(?:mathcal|mathbb|mathbf|mathrm|mathscr|text|textbf|textit|operatorname)\{([^{}]*)\}", r"\1", text
    )
    text = re.sub(r"\^\{?([0-9+\-]{1,3})\}?", lambda m: m.group(1).translate(_SUPERSCRIPT), text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: _GREEK.get(m.group(1), m.group(1)), text)
    text = re.sub(r"[_^]\{([^{}]*)\}", r"\1", text)
    text = text.replace("_", "").replace("{", "").replace("}", "").replace("\\", "")
    return text.strip()


def plain_text(text: str) -> str:
    """Abstract text without Markdown emphasis, LaTeX math markers or \\url{}, whitespace collapsed."""
    text = re.sub(r"\\(?:url|href)\{([^{}]*)\}(?:\{[^{}]*\})?", r"\1", text)
    text = re.sub(r"~?\\footnote\{(?:[^{}]|\{[^{}]*\})*\}", "", text)
    text = re.sub(r"\\(?:emph|textit|textbf|texttt|textsc|mathrm|it|bf|em)\s*\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\{\\(?:it|bf|em|tt)\s+([^{}]*)\}", r"\1", text)
    text = text.replace("~", " ")
    text = re.sub(r"\$([^$]{1,200})\$", lambda m: _latex_math(m.group(1)), text)
    text = re.sub(r"\*{1,2}|`", "", text)
    text = text.replace("``", '"').replace("''", '"')
    return re.sub(r"\s+", " ", text).strip()


# --------------------------------------------------------------------------- sentences

_ABBREVIATIONS = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|Fig|Figs|Eq|Eqs|Sec|Ref|Refs|resp|approx|a\.k\.a|w\.r\.t|No|Dr|Mr|Ms|Prof|St)\.|\b[A-Z]\.)$"
)


def sentences(text: str) -> list[str]:
    """Split prose into sentences, keeping "e.g.", "et al.", initials and decimals inside them."""
    pieces = re.split(r"(?<=[.!?])\s+(?=[\"“(\[]?[A-Z0-9])|(?<=[a-z]{3}\.)(?=[A-Z][a-z]+\s)", text)
    out: list[str] = []
    for piece in pieces:
        if out and _ABBREVIATIONS.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]
