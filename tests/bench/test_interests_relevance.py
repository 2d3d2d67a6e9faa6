"""The relevance rule of bench/interests_eval.py: a paper is about an area under another name too."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from interests_eval import within


def test_an_iclr_keyword_holding_every_word_of_the_area_is_about_it() -> None:
    labels = [{"deep generative models"}, {"low-resource nlp", "data augmentation"}, {"generative"}, {"gans"}]
    widened = within("ICLR", labels, {"generative models", "nlp", "gan"})
    assert "generative models" in widened[0]
    assert "nlp" in widened[1]
    assert widened[2] == {"generative"}  # one word of two is not the area
    assert "gan" in widened[3]  # a plural is the same word
    assert labels[0] == {"deep generative models"}  # (the labels given are left as they were)


def test_an_ijcai_sub_area_renamed_under_another_field_is_about_it_unless_every_field_has_it() -> None:
    labels = [
        {"game theory and economic paradigms: computational social choice"},
        {"computer vision: applications"},
    ]
    areas = {
        "agent-based and multi-agent systems: computational social choice",
        "machine learning: applications",
    }
    widened = within("IJCAI", labels, areas)
    assert "agent-based and multi-agent systems: computational social choice" in widened[0]
    assert widened[1] == {"computer vision: applications"}  # "applications" is a sub-area of every field
