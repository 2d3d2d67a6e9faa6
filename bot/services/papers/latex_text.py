"""LaTeX in titles and abstracts as text people read: ``2.2$\\times$`` → "2.2×", ``$\\alpha$`` → "α",
``$O(n^2)$`` → "O(n²)", ``\\textit{Fast}`` → "Fast".

Applied where a paper is shown (embeds, snippets, gists, RIS and CSL-JSON exports), never to the stored
text, the search terms or a BibTeX export (which keeps its LaTeX).

Only what reads as LaTeX is touched: a ``$…$`` span (one whose inside starts or ends with a space only
when it holds a backslash, ``^``, ``_`` or ``{``: "costs $5 and $10" stays), ``\\(…\\)``, and known commands (``\\emph{…}``, ``\\%``); a plain "5%"
or "a_b" stays as written. Symbols are pylatexenc's table (hundreds of macros: ``\\sim`` → "∼",
``\\nabla`` → "∇"); its parser is not used on whole texts, since it reads "%" as a comment and drops
the rest of the line ("5% better" → "5") and empties ``\\texttt{…}`` in math.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from functools import cache
from typing import Final

from pylatexenc.latex2text import LatexNodes2Text

_SUPERSCRIPTS: Final = dict(
    zip(
        "0123456789+-−=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVWαβγδεθιφχ⊤*′",
        "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵅᵝᵞᵟᵋᶿᶥᵠᵡᵀ*′",
        strict=True,
    )
)
_SUBSCRIPTS: Final = dict(
    zip("0123456789+-=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ", strict=True)
)
_DELIMITER_SIZES: Final = re.compile(r"\\(?:left|right|[bB]igg?[lr]?|middle)(?![A-Za-z])\s*")
_SPACING: Final = re.compile(r"\\[,;:!> ]|\\q?quad(?![A-Za-z])")
_FONTS: Final = (
    r"mathcal|mathbb|mathbf|mathrm|mathsf|mathtt|mathit|mathscr|mathfrak|boldsymbol|bm|text|textrm|"
    r"textbf|textit|texttt|textsf|textsc|textnormal|emph|operatorname|mbox|underline|overline"
)
_FONT: Final = re.compile(rf"\\(?:{_FONTS})\s*\{{([^{{}}]*)\}}")
_OLD_FONT: Final = re.compile(r"\{\\(?:it|bf|em|tt|rm|sf|sc|cal|bb)\s+([^{}]*)\}")
_FONT_LETTER: Final = re.compile(r"\\(?:mathcal|mathbb|mathbf|mathrm|mathsf|mathtt|mathit|mathscr|bm)\s+(\w)")
_FRAC: Final = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_SQRT: Final = re.compile(r"\\sqrt\s*(?:\{([^{}]*)\}|(\w))")
_ACCENTS: Final = {"tilde": "\u0303", "widetilde": "\u0303", "hat": "\u0302", "widehat": "\u0302", "bar": "\u0304",
                   "vec": "\u20d7", "dot": "\u0307"}  # fmt: skip
_ACCENT: Final = re.compile(rf"\\({'|'.join(_ACCENTS)})\s*(?:\{{([^{{}}]*)\}}|(\w))")
_SCRIPT: Final = re.compile(r"([_^])\s*(?:\{([^{}]*)\}|(\\[A-Za-z]+|[^\s{}\\]))")
_MACRO: Final = re.compile(r"\\([A-Za-z]+)")
_ESCAPED: Final = re.compile(r"\\([%&_#$])")
_BRACES: Final = {"\\{": "\ue000", "\\}": "\ue001", "\\|": "‖"}  # kept from the braces' removal
#: a math span: $$…$$, $…$ (inside not starting or ending with a space), \(…\), \[…\]
_MATH: Final = re.compile(
    r"\$\$(?P<display>[^$]{1,400})\$\$|(?<!\\)\$(?P<inline>[^$]{1,400})\$|"
    r"\\\((?P<paren>.{1,400}?)\\\)|\\\[(?P<bracket>.{1,400}?)\\\]"
)
_RAISED, _LOWERED = "\ue002", "\ue003"
_LATEX_MARK: Final = re.compile(r"[\\^_{]")
#: commands outside math that only style their argument
_TEXT_FONT: Final = re.compile(
    r"\\(?:emph|textit|textbf|texttt|textsf|textsc|textrm|textnormal|underline|url|mbox)\s*\{([^{}]*)\}"
)
_TEXT_SYMBOL: Final = re.compile(r"\\([A-Za-z]+)(?![A-Za-z{])\s?")
_NAMED_FUNCTIONS: Final = frozenset({"log", "exp", "sin", "cos", "tan", "max", "min", "arg", "det", "lim",
                                     "sup", "inf", "ln", "Pr", "softmax", "argmax", "argmin", "tanh"})  # fmt: skip


def readable(text: str) -> str:
    """``text`` with its LaTeX shown as text (see the module doc); text without any stays as it is."""
    if "$" not in text and "\\" not in text and "``" not in text:
        return text
    text = _MATH.sub(_math_span, text)
    text = _OLD_FONT.sub(r"\1", text)
    for _ in range(2):  # \textbf{\emph{x}}
        text = _TEXT_FONT.sub(r"\1", text)
    text = _TEXT_SYMBOL.sub(_text_symbol, text)
    text = _ESCAPED.sub(r"\1", text)
    return text.replace("``", "“").replace("''", "”")


def _math_span(match: re.Match[str]) -> str:
    inside = next(group for group in match.groups() if group is not None)
    if match.group("inline") is not None and inside != inside.strip() and not _LATEX_MARK.search(inside):
        return match.group(0)  # "costs $5 and $10": dollars, not math
    return math_text(inside)


def math_text(math: str) -> str:
    """The inside of a math span as text: symbols as Unicode, scripts raised or lowered where Unicode
    has every character of them ("n^2" → "n²", "x_{t+1}" → "xₜ₊₁", else "AUC_PR"), fonts and sizes
    dropped, ``\\frac{a}{b}`` → "a/b"."""
    text = _DELIMITER_SIZES.sub("", math)
    text = _SPACING.sub(" ", text)
    for escaped, kept in _BRACES.items():
        text = text.replace(escaped, kept)
    text = text.replace("\\_", "_")
    for _ in range(4):  # inside out: \mathcal{O}(\sqrt{\frac{1}{n^{2}}})
        before = text
        text = _OLD_FONT.sub(r"\1", text)
        text = _FONT.sub(r"\1", text)
        text = _FONT_LETTER.sub(r"\1", text)
        text = _FRAC.sub(lambda m: f"{_grouped(m.group(1))}/{_grouped(m.group(2))}", text)
        text = _SQRT.sub(lambda m: "√" + _grouped(m.group(1) or m.group(2)), text)
        text = _ACCENT.sub(lambda m: _accented(m.group(1), m.group(2) or m.group(3)), text)
        text = _SCRIPT.sub(_script, text)
        if text == before:
            break
    text = _MACRO.sub(_math_symbol, text)
    text = _ESCAPED.sub(r"\1", text)
    text = text.replace("{", "").replace("}", "").replace("~", " ")
    text = text.replace("\ue000", "{").replace("\ue001", "}").replace(_RAISED, "^").replace(_LOWERED, "_")
    return unicodedata.normalize("NFC", " ".join(text.split()))  # "O" and a combining tilde: "Õ"


def _grouped(part: str) -> str:
    """A fraction's or root's part, in brackets when it is more than one symbol."""
    part = part.strip()
    simple = len(part) <= 1 or part.isalnum() or re.fullmatch(r"\\[A-Za-z]+", part) is not None
    return part if simple else f"({part})"


def _accented(accent: str, body: str) -> str:
    body = body.strip()
    return body + _ACCENTS[accent] if len(body) == 1 else body


def _script(match: re.Match[str]) -> str:
    """A superscript or subscript as Unicode when every character of it has one, else as written
    without braces ("^{-1}" → "⁻¹", "_{PR}" → "_PR")."""
    kind, body = match.group(1), match.group(2) if match.group(2) is not None else match.group(3)
    body = _MACRO.sub(_math_symbol, body).replace(" ", "")
    table = _SUPERSCRIPTS if kind == "^" else _SUBSCRIPTS
    if body and all(c in table for c in body):
        return "".join(table[c] for c in body)
    if kind == "^" and body in {"*", "′", "'", "†"}:
        return body
    mark = _RAISED if kind == "^" else _LOWERED  # (not read as a script again by the next pass)
    return f"{mark}{body}" if len(body) <= 1 or kind == "_" else f"{mark}({body})"


def _math_symbol(match: re.Match[str]) -> str:
    name = match.group(1)
    if name in _NAMED_FUNCTIONS:  # "d\log T" → "d log T"
        at = match.start()
        return f" {name}" if at and match.string[at - 1].isalnum() else name
    return symbol(name) or name


def _text_symbol(match: re.Match[str]) -> str:
    """A bare macro outside math ("\\epsilon-greedy"): its symbol when it has one, else as written."""
    found = symbol(match.group(1))
    return found if found else match.group(0)


@cache
def symbol(name: str) -> str | None:
    """The Unicode of an argument-free LaTeX macro (``alpha`` → "α"), from pylatexenc's table; None
    for a macro that is no symbol."""
    if name in _OWN_SYMBOLS:
        return _OWN_SYMBOLS[name]
    try:
        text = str(_CONVERTER.latex_to_text("\\" + name))
    except Exception:  # pylatexenc raises its own errors on macros it cannot read
        return None
    text = text.strip()
    if not text or "%" in text or text == name or any(c.isspace() for c in text):
        return None
    return text


_CONVERTER: Final = LatexNodes2Text()
# its table logs a configuration warning for a few macros it cannot substitute alone (\widetilde); the
# lookup then answers None, which is all this module needs
logging.getLogger("pylatexenc").setLevel(logging.ERROR)
#: where the table's symbol reads less well in running text (its ϵ is the lunate form)
_OWN_SYMBOLS: Final = {"epsilon": "ε", "lVert": "‖", "rVert": "‖", "lvert": "|", "rvert": "|"}
