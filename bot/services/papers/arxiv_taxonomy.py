"""arXiv's category taxonomy (arxiv.org/category_taxonomy): the categories a fetch may name, checked
before any request, so a misspelt one is refused at once with the nearest real ones instead of being
asked of arXiv (which answers an unknown category with an empty result, indistinguishable from a quiet
day)."""

from __future__ import annotations

import difflib
from typing import Final

from bot.errors import UserFacingError

_GROUPS: Final = {
    "cs": "AI AR CC CE CG CL CR CV CY DB DC DL DM DS ET FL GL GR GT HC IR IT LG LO MA MM MS NA NE NI OH "
    "OS PF PL RO SC SD SE SI SY",
    "econ": "EM GN TH",
    "eess": "AS IV SP SY",
    "math": "AC AG AP AT CA CO CT CV DG DS FA GM GN GR GT HO IT KT LO MG MP NA NT OA OC PR QA RA RT SG SP ST",
    "astro-ph": "CO EP GA HE IM SR",
    "cond-mat": "dis-nn mes-hall mtrl-sci other quant-gas soft stat-mech str-el supr-con",
    "nlin": "AO CD CG PS SI",
    "physics": "acc-ph ao-ph app-ph atm-clus atom-ph bio-ph chem-ph class-ph comp-ph data-an ed-ph "
    "flu-dyn gen-ph geo-ph hist-ph ins-det med-ph optics plasm-ph pop-ph soc-ph space-ph",
    "q-bio": "BM CB GN MN NC OT PE QM SC TO",
    "q-fin": "CP EC GN MF PM PR RM ST TR",
    "stat": "AP CO ME ML OT TH",
}
#: the archives that are categories themselves (no sub-categories)
_WHOLE: Final = (
    "gr-qc",
    "hep-ex",
    "hep-lat",
    "hep-ph",
    "hep-th",
    "math-ph",
    "nucl-ex",
    "nucl-th",
    "quant-ph",
)

#: every category, spelt as arXiv spells it
CATEGORIES: Final = frozenset(
    [f"{group}.{sub}" for group, subs in _GROUPS.items() for sub in subs.split()] + list(_WHOLE)
)
_BY_FOLDED: Final = {name.casefold(): name for name in CATEGORIES}


class UnknownCategoryError(UserFacingError):
    """Not a category of arXiv's taxonomy; str() names the nearest ones."""


def arxiv_category(text: str) -> str:
    """``text`` as the arXiv category it names, in arXiv's spelling ("cs.lg" → "cs.LG"), or
    UnknownCategoryError naming the nearest categories."""
    wanted = text.strip()
    found = _BY_FOLDED.get(wanted.casefold())
    if found is not None:
        return found
    near = difflib.get_close_matches(wanted.casefold(), list(_BY_FOLDED), n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(_BY_FOLDED[n] for n in near)}?" if near else ""
    raise UnknownCategoryError(
        f"{wanted[:40]!r} is not an arXiv category.{hint} Categories look like cs.LG, math.ST or hep-th "
        "(arxiv.org/category_taxonomy lists them)."
    )
