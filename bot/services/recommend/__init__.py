"""Recommendation: what a person is shown next and how their reactions teach it.

``recommender`` picks papers for `/paper recommend` and digests; ``learner`` and ``person_models``
turn reactions into a model of the person; ``paper_space`` holds the papers' coordinates the models
use; ``profile`` serves `/paper interests`; ``topic_breadth`` tells a broad topic from a narrow one.
"""
