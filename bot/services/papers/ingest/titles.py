"""Titles for abstract-only papers, and the code or project URL an abstract names.

A derived title is what a researcher would call the paper after reading its abstract:

1. the method's name where the abstract names one ("we propose Medusa, an efficient method …",
   "a new algorithm … dubbed ILARL", "termed StyDeSty", "called Deep Demonstration Tracing (DDT)",
   "a novel imitation learning algorithm, Preference Aided Imitation Learning … (PAIL)",
   "Our proposed X (ABBR)") followed by a short description built from the appositive or the clause
   around it ("Medusa: an efficient method that augments LLM inference by adding extra decoding
   heads …");
2. else the paper's contribution as a noun phrase ("we present a rigorous analysis of the Goldilocks
   zone …" → "A rigorous analysis of the Goldilocks zone …", "This paper extends X" → "Extending X");
3. else the opening clause, trimmed at a word boundary.

Titles are kept under `MAX_TITLE` characters and cut at a word, never mid-word, with "…".
"""

from __future__ import annotations

import re

from bot.services.papers.prose import plain_text, sentences

MAX_TITLE = 125
MAX_FALLBACK = 90

# --------------------------------------------------------------------------- names

_AUTHORIAL = re.compile(
    r"\b(?:we|our|us|this (?:paper|work|study|article|note)|the present (?:paper|work))\b", re.I
)
_INTRO_VERBS = (
    r"(?:propose|present|introduce|devise|develop|design|build|release|contribute|offer|describe|"
    r"put forward|create|construct|formulate|derive|discover|call|name)(?:s|d|ed)?"
)
_NAMING_WORDS = (
    r"(?:dubbed|termed(?: as)?|called|named|namely|referred to as|which we call|we call it|coined)"
)
_DETERMINERS = {
    "a",
    "an",
    "the",
    "our",
    "this",
    "these",
    "that",
    "those",
    "two",
    "three",
    "several",
    "some",
    "new",
    "novel",
    "and",
    "its",
    "their",
    "it",
    "how",
    "whether",
    "both",
    "first",
    "all",
    "each",
    "any",
    "many",
    "more",
    "one",
}
_CONNECTORS = {
    "of",
    "for",
    "and",
    "from",
    "with",
    "in",
    "to",
    "via",
    "on",
    "the",
    "a",
    "an",
    "by",
    "as",
    "at",
    "&",
}
_ACRONYM = re.compile(r"\(([^()]{0,22}[A-Z][^()]{0,22})\)")
_NAME_END = re.compile(
    r"\s*(?:[,:;.]|\s—|\s–|\s-\s|\bwhich\b|\bthat\b|\bto\b|\bfor\b|\bby\b|\bwith\b|\bas\b|\bthrough\b|"
    r"\bwhere\b|\bwhose\b|\bto\b|\bin\b|\bon\b|\bbased\b|\busing\b)"
)


def _has_caps(word: str) -> bool:
    """A token that looks like part of a name: an inner capital (reSGLD, MGit) or an acronym."""
    core = word.strip("()[]\"'“”’")
    if len(core) >= 2 and any(ch.isupper() for ch in core[1:]):
        return True
    return bool(len(core) >= 2 and core.isupper())


def _is_name(phrase: str, *, strict: bool = False) -> bool:
    """Whether a phrase right after "we propose" is a method name rather than a description.

    `strict`: every content word is capitalised ("Adversarially Robust Deep Multi-View Clustering"),
    as required where nothing else marks the phrase as a name.
    """
    words = phrase.split()
    if not words or len(words) > 9 or words[0].lower() in _DETERMINERS | _CONNECTORS:
        return False
    acronym = bool(_ACRONYM.search(phrase))
    content = [w for w in words if w.lower() not in _CONNECTORS and not w.startswith("(")]
    lower = [w for w in content if not (w[0].isupper() or w[0].isdigit() or _has_caps(w))]
    if strict:
        return not lower and len(content) >= 2
    if acronym:
        return True  # "reflected reSGLD (r2SGLD)", "… Learning from imperfect demonstrations (PAIL)"
    head = words[0]
    if not (head[0].isupper() or head[0].isdigit() or _has_caps(head)):
        return False
    # "LESS", "Medusa", "Sparse Cocktail"; not "Gaussian processes with …" (mostly lower-case words)
    return len(lower) <= 1 and (len(content) <= 4 or not lower)


def _cut_name(text: str) -> tuple[str, str]:
    """Split "High-Order Contrastive Tensor Completion (HOCTC), an innovative network …" into the
    name and what follows it."""
    paren = re.match(r"(.{1,120}?\([^()]{1,24}\))", text)
    if paren and not re.search(r"[,:;]", paren.group(1)):
        return paren.group(1).strip(), text[paren.end() :]
    match = _NAME_END.search(text)
    name, after = (text, "") if not match else (text[: match.start()], text[match.start() :])
    words = name.strip().strip("\"'“”‘’").rstrip(".").split()
    while len(words) > 1 and words[-1].islower() and not words[-1].startswith("("):
        after = f" {words.pop()}{after}"  # "H2RBox merely …": a name ends on a capitalised word
    return " ".join(words), after


def _describe(after: str) -> str | None:
    """A short description from the text after a name: an appositive NP or a relative clause."""
    rest = after.strip()
    rest = re.sub(r"^(?:[,:;—–-]|\s)+", "", rest)
    if not rest:
        return None
    first = rest.split()[0].lower()
    if first in {"a", "an", "the"}:
        return _clip_clause(rest)
    if first in {"which", "that"}:
        return "which " + _clip_clause(rest.split(" ", 1)[1]) if " " in rest else None
    return None


def _continuation(after: str) -> str | None:
    """What follows a name that completes a short description ("… scheme, termed X, to account for Y")."""
    rest = re.sub(r"^(?:[,:;—–-]|\s)+", "", after.strip())
    if re.match(r"(?:which|that|to|for|capable|designed|tailored|based on|aiming)\b", rest):
        return _clip_clause(rest)
    return None


_CLAUSE_CUTS = re.compile(
    r"(?:;|:\s|(?<!\be\.g)(?<!\bi\.e)\.\s+(?=[A-Z])|\.$|,\s*(?:which|where|thereby|while|whereas|as well as|so that|in order to|including|"
    r"such as|e\.g\.|i\.e\.|by|resulting|leading|making|enabling|allowing|"
    r"but|yet|and (?:we|then|also|further|thus|it|its|this|our|{verbs}))\b|"
    r"\s(?:thereby|whereas|while|so that|in order to)\s|\sand (?:we|{verbs})\b)".format(
        verbs="(?:prove|show|demonstrate|analy[sz]e|evaluate|conduct|establish|provide|propose|present|"
        "introduce|develop|derive|design|study|obtain|give|apply|extend|use|compare|discuss|illustrate|"
        "find|report|offer|achieve|verify|validate|explore|investigate)s?"
    )
)


def _clip_clause(text: str) -> str:
    """Text up to the end of its first clause."""
    match = _CLAUSE_CUTS.search(text)
    clause = text[: match.start()] if match else text
    return clause.strip().rstrip(",.;:")


_GENERIC_DESC = re.compile(
    r"^(?:a|an|the)(?:\s+(?:new|novel|simple|general|efficient|effective|unified|principled|first))*"
    r"\s+(?:algorithm|method|framework|approach|model|technique|scheme|system|architecture|paradigm)s?$",
    re.I,
)


def _generic(description: str | None) -> bool:
    return description is None or len(description.split()) < 3 or bool(_GENERIC_DESC.match(description))


def _name_in(sentence: str) -> tuple[str, str | None] | None:
    """(name, description) when this sentence names the paper's method."""
    if not _AUTHORIAL.search(sentence):
        return None
    # "a new algorithm for X dubbed ILARL which …", "a scheme, termed as StyDeSty, to …"
    dubbed = re.search(
        rf"(?:\b{_INTRO_VERBS}\s+(?P<desc>[^;:]*?))?\s*,?\s*\b{_NAMING_WORDS}\s+(?P<rest>.+)", sentence, re.I
    )
    if dubbed:
        name, after = _cut_name(re.sub(r"^(?:the|our)\s+", "", dubbed.group("rest")).lstrip("\"'“‘"))
        if name and _is_name(name):
            desc = dubbed.group("desc")
            desc = _clip_clause(desc.strip(" ,")) if desc else None
            if desc and not re.match(r"(?:a|an|the|our|two|several|\w+ly)\b", desc, re.I):
                desc = None
            if desc:
                tail = _continuation(after)
                if tail and len(desc.split()) <= 6:
                    desc = f"{desc} {tail}"
                return name, desc
            return name, _describe(after)
    # "a novel imitation learning (IL) algorithm, Preference Aided … (PAIL)."
    appositive = re.search(
        rf"\b{_INTRO_VERBS}\s+(?P<desc>(?:a|an|the)\s[^,;:]+?),\s+(?:the\s+)?(?P<name>[^,;:]{{3,120}}?\([^()]{{1,24}}\))(?=[.,;:\s]|$)",
        sentence,
        re.I,
    )
    if appositive and _is_name(appositive.group("name")):
        return appositive.group("name").strip(), _clip_clause(appositive.group("desc"))
    # "we propose LESS, an optimizer-aware …", "we devise Frequency Adapting Group (FRAG) which …"
    first = re.search(
        rf"(?<!\bthe )(?<!\bour )\b{_INTRO_VERBS}\s+(?!by\b)(?:the\s+|our\s+)?(?P<rest>.+)", sentence, re.I
    )
    if first:
        name, after = _cut_name(first.group("rest"))
        if _is_name(name):
            return name, _describe(after)
    # "we propose a novel Adversarially Robust Deep Multi-View Clustering by leveraging …"
    novel = re.search(r"\b(?:a|an)\s+(?:novel|new)\s+(?P<rest>[A-Z].+)", sentence)
    if novel:
        name, after = _cut_name(novel.group("rest"))
        if _is_name(name, strict=True):
            tail = after.strip()
            if re.match(r"(?:by|via|through|with|for|based on|using)\b", tail):
                return f"{name} {_clip_clause(tail)}", ""  # already reads as a title
            return name, _describe(after)
    # "Our proposed Diffusion Model-Augmented Behavioral Cloning (DBC) employs …"
    ours = re.search(
        r"\bOur (?:proposed |new |novel )?(?:(?:method|model|framework|approach|algorithm|system),?\s+)?"
        r"(?P<rest>[A-Z].+)",
        sentence,
    )
    if ours:
        name, after = _cut_name(ours.group("rest"))
        if _is_name(name, strict=True) and _ACRONYM.search(name):
            return name, _describe(after)
    return None


# --------------------------------------------------------------------------- contributions

_NP_VERBS = (
    r"suggest|propose|present|introduce|devise|develop|design|derive|study|studie|investigate|analy[sz]e|examine|"
    r"explore|consider|address|tackle|focus(?:e)? on|delve(?:s|d)? into|establish|formulate|characteri[sz]e|"
    r"provide|describe|put forward|build|construct"
)
_GERUND_VERBS = {
    "extend": "Extending",
    "improve": "Improving",
    "generalize": "Generalizing",
    "generalise": "Generalising",
    "unify": "Unifying",
    "bridge": "Bridging",
    "accelerate": "Accelerating",
    "revisit": "Revisiting",
    "rethink": "Rethinking",
    "scale": "Scaling",
}
_CONTRIBUTION = re.compile(
    r"\b(?:we|this (?:paper|work|study|article|note)|the present (?:paper|work))\b"
    rf"(?P<between>(?:\s+[\w-]+){{0,8}}?)\s+(?P<verb>(?:{_NP_VERBS})(?:s|es|d|ed)?|"
    rf"(?P<gerund>{'|'.join(_GERUND_VERBS)})(?:s|es|d|ed)?)\s+(?P<object>.+)",
    re.I,
)
_ANAPHORA = re.compile(r"\b(?:these|those|such|this|them|it|they)\b", re.I)


def _contribution(sentence: str) -> str | None:
    """The paper's contribution as a noun phrase, or None when the sentence states none usable."""
    match = _CONTRIBUTION.search(sentence)
    if not match:
        return None
    between = match.group("between").lower().split()
    if any(word in {"not", "also", "then", "further"} for word in between[:1]) and len(between) > 3:
        return None
    obj = match.group("object").strip()
    obj = re.sub(r"^(?:and\s+\w+\s+)", "", obj)  # "introduce and devise several …"
    if re.match(r"(?:that|if|whether|on|to|upon|in|us|ourselves|here)\b", obj, re.I):
        return None
    clause = _clip_clause(obj)
    gerund = match.group("gerund")
    if _ANAPHORA.search(" ".join(clause.split()[:7])):
        # "a thorough evaluation of these factors by evaluating the effect of X" → "Evaluating the effect of X"
        by = re.search(r"\bby ([a-z]+ing\b.*)", obj)
        if by:
            return _clip_clause(by.group(1))
        return None
    if len(clause.split()) < 3:
        return None
    if gerund:
        return f"{_GERUND_VERBS[gerund.lower()]} {clause}"
    return clause


_SUBJECT = re.compile(
    r"^(?P<subject>[A-Z][^,;:()]{2,60}?)\s*(?:\([^()]*\)\s*)?(?:has|have|is|are|was|were|can|provides?|"
    r"remains?|offers?|enables?|plays?|shows?|stands?|aims?|addresses|mimics|emerged|becomes?|achieves?)\b"
)


def _topic(first_sentence: str) -> str | None:
    """The subject of the opening sentence ("In-context learning (ICL, …) has been …" → "in-context
    learning"), lower-cased unless it starts with an acronym or a name."""
    match = _SUBJECT.match(first_sentence)
    if not match:
        return None
    subject = match.group("subject").strip()
    if len(subject.split()) > 6 or subject.split()[0].lower() in _DETERMINERS:
        return None
    head = subject.split()[0]
    if not _has_caps(head):
        subject = subject[0].lower() + subject[1:]
    return subject


# --------------------------------------------------------------------------- assembling


_TRAILING_STOP = {
    "of",
    "the",
    "a",
    "an",
    "and",
    "or",
    "for",
    "to",
    "in",
    "on",
    "with",
    "by",
    "from",
    "via",
    "as",
    "at",
    "its",
    "their",
    "that",
    "which",
}


_BOUNDARY = re.compile(
    r",\s|\s(?=(?P<word>by|to|which|that|via|using|with|through|in|on|for|while|where|at|based on|such as)\s)"
)
_LIST_GOES_ON = re.compile(r"(?:(?:[\w-]+\s?){1,3},\s)*(?:and|or)\s")
# Words that need what follows them: never end a title on one.
_NEEDS_COMPLEMENT = {"based", "due", "according", "relative", "compared", "able", "up", "leading", "used"}


def clip(text: str, limit: int, *, keep: int | None = None) -> str:
    """Shorten to at most `limit` characters: at the last phrase boundary (", ", " by ", " to ", …)
    past `keep` characters (default half the limit) when there is one, which reads as a complete
    title; else at a word, with "…"."""
    text = text.strip().rstrip(",;:")
    if len(text) <= limit:
        return text.rstrip(".")
    keep = limit // 2 if keep is None else keep
    best = None
    for match in _BOUNDARY.finditer(text, 0, limit + 1):
        head = text[: match.start()].rstrip()
        last = head.split()[-1].lower() if head.split() else ""
        word = match.group("word")
        if (
            len(head) >= keep
            and last not in _TRAILING_STOP
            and last not in _NEEDS_COMPLEMENT
            and not (last.endswith("ed") and word in {"to", "for", "by", "with", "in", "on", "at"})
            and not (word is None and _LIST_GOES_ON.match(text, match.end()))
            and head.count("(") == head.count(")")
        ):
            best = head
    if best:
        return best.rstrip(",;:")
    words = text[: limit - 1].split()
    if not text[limit - 1].isspace() and len(words) > 1:
        words = words[:-1]  # the last word was cut in the middle
    while len(words) > 1 and words[-1].lower().strip(",;:") in _TRAILING_STOP:
        words.pop()
    return " ".join(words).rstrip(",;:(") + "…"


def _capitalise(text: str) -> str:
    if not text:
        return text
    head = text.split()[0]
    if _has_caps(head):
        return text
    return text[0].upper() + text[1:]


def _opening_clause(text: str) -> str:
    first = sentences(text)[0] if text else ""
    first = re.sub(r"^(?:In this (?:paper|work|study),?\s+)", "", first)
    first = re.sub(r"^(?:We|This (?:paper|work|study)) [a-z]+s? (?=(?:a|an|the)\b)", "", first)
    subordinate = re.match(
        r"(?:While|Although|Though|Despite|Whereas|Since|As|Because|When)\b[^,]{3,150},\s*(?P<main>.+)", first
    )
    if subordinate and len(subordinate.group("main").split()) >= 4:
        first = subordinate.group("main")
    return _capitalise(_clip_clause(first) or first)


def derive_title(abstract: str) -> str:
    """A readable title for a paper known only by its abstract (see the module docstring)."""
    text = plain_text(abstract)
    if not text:
        return ""
    parts = sentences(text)
    for index, sentence in enumerate(parts):
        found = _name_in(sentence)
        if found is None:
            continue
        name, description = found
        name = name.strip().rstrip(".,")
        if description == "":
            return clip(_capitalise(name), MAX_TITLE)
        if _generic(description):
            better = _other_contribution(parts, index)
            if better:
                description = better[0].lower() + better[1:] if not _has_caps(better.split()[0]) else better
        if description:
            head = _capitalise(name)
            if len(head) <= MAX_TITLE - 20:
                joiner = ", " if description.startswith("which ") else ": "
                keep = max(MAX_TITLE // 2, len(head) + 20)
                return clip(f"{head}{joiner}{description}", MAX_TITLE, keep=keep)
            return clip(head, MAX_TITLE)
        topic = _topic(parts[0])
        if topic and topic.lower() not in name.lower():
            return clip(f"{_capitalise(name)} for {topic}", MAX_TITLE)
        return clip(_capitalise(name), MAX_TITLE)
    for sentence in parts:
        found_np = _contribution(sentence)
        if found_np:
            return clip(_capitalise(found_np), MAX_TITLE)
    return clip(_opening_clause(text), MAX_FALLBACK)


def _other_contribution(parts: list[str], naming_index: int) -> str | None:
    for position, sentence in enumerate(parts):
        if position == naming_index:
            continue
        found = _contribution(sentence)
        if found and not _generic(found):
            return found
    return None


# --------------------------------------------------------------------------- code URLs

_URL = re.compile(
    r"(?:https?://|www\.)[^\s<>\"'{}|\\^`]+"
    r"|\b(?:github\.com|gitlab\.com|huggingface\.co|bitbucket\.org|codeberg\.org)/[^\s<>\"'{}|\\^`]+",
    re.I,
)
_CODE_HOSTS = re.compile(
    r"^https?://(?:www\.)?(?:github\.com|gitlab\.com|huggingface\.co|bitbucket\.org|codeberg\.org|sourceforge\.net)/",
    re.I,
)
_PROJECT_HOSTS = re.compile(
    r"^https?://[^/]*(?:github\.io|gitlab\.io|sites\.google\.com|netlify\.app|pages\.dev|vercel\.app)\b", re.I
)
_CODE_WORDS = re.compile(
    r"\b(?:code|project|page|website|available|demo|implementation|repository|released|github)\b", re.I
)
_URL_TRAILING = ".,;:!?'\"*"


def _tidy_url(raw: str) -> str:
    url = raw
    while url:
        last = url[-1]
        if last in _URL_TRAILING or (
            last in ")]}" and url.count(last) > url.count({")": "(", "]": "[", "}": "{"}[last])
        ):
            url = url[:-1]
        else:
            break
    if not url.lower().startswith(("http://", "https://")):
        url = "https://" + url
    return url


def _may_name_a_url(text: str) -> bool:
    low = text.lower()
    return (
        "http" in low
        or "www." in low
        or "github." in low
        or "gitlab." in low
        or "huggingface." in low
        or "bitbucket." in low
        or "codeberg." in low
    )


def _sentence_around(text: str, start: int, end: int) -> str:
    left = max(text.rfind(". ", 0, start), text.rfind("? ", 0, start), text.rfind("! ", 0, start))
    right = min((i for i in (text.find(". ", end), text.find("? ", end)) if i >= 0), default=len(text))
    return text[left + 1 : right]


def extract_code_url(abstract: str) -> str | None:
    """The code or project URL an abstract names: a code host first (GitHub, GitLab, Hugging Face, …),
    then a project page (github.io, …), then any URL in a sentence about code or a project page."""
    if not _may_name_a_url(abstract):
        return None  # most abstracts: a few substring scans, no regex
    text = re.sub(r"\s+", " ", re.sub(r"\\(?:url|href)\{([^{}]*)\}", r"\1", abstract))
    found: list[tuple[str, int, int]] = []
    for match in _URL.finditer(text):
        url = _tidy_url(match.group(0))
        if len(url) > len("https://") + 3:
            found.append((url, match.start(), match.end()))
    for url, _, _ in found:
        if _CODE_HOSTS.match(url):
            return url
    for url, _, _ in found:
        if _PROJECT_HOSTS.match(url):
            return url
    for url, start, end in found:
        if _CODE_WORDS.search(_sentence_around(text, start, end)):
            return url
    return None
