"""Candidate identity: ``Origin`` parses every origin text and prints it back unchanged (the text
is what cache metadata and JSON outputs carry), and answers what code used to ask substrings."""
import random
import string

import pytest

from torch_cudal1.contracts import Candidate
from torch_cudal1.origin import Origin

TEXTS = [
    "baseline:eager", "baseline:inductor", "baseline:inductor-max-autotune",
    "baseline:inductor-reduce-overhead", "builtin:cudagraph", "builtin:aoti",
    "builtin:inductor-max-autotune", "builtin:tf32", "builtin:tf32+inductor",
    "builtin:tf32+inductor-max-autotune", "builtin:cudnn-benchmark",
    "builtin:cudnn-benchmark+inductor", "builtin:channels-last",
    "builtin:channels-last+cudnn-benchmark", "builtin:rewrite(cse)",
    "builtin:rewrite(cse,diag_broadcast)+inductor", "builtin:rewrite(matrix_chain)+inductor+tf32",
    "builtin:rewrite(avg_pool_as_conv)+inductor+cudnn-benchmark", "builtin:rewrite(cse)+aoti",
    "builtin:inductor+cudagraph", "builtin:tf32+inductor+cudagraph",
    "builtin:rewrite(cse)+inductor+cudagraph", "builtin:openai:r1s0+cudagraph",
    "openai:r1s0", "vllm:r2s1", "replay:r1s0", "file:/tmp/a+b:c.py", "cache:0123abcd",
    "fallback:eager", "?", "", ":x", "x:", "builtin:", "builtin:rewrite()",
]


@pytest.mark.parametrize("text", TEXTS)
def test_parse_and_str_are_inverse(text):
    assert str(Origin.parse(text)) == text
    assert Origin.parse(Origin.parse(text)) == Origin.parse(text)


def test_random_texts_round_trip():
    rng = random.Random(0)
    alphabet = string.ascii_lowercase + "+:(),-_/"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert str(Origin.parse(text)) == text


def test_structure():
    o = Origin.parse("builtin:rewrite(cse,diag_broadcast)+inductor+tf32")
    assert (o.engine, o.base, o.rewrites, o.wrappers) == (
        "builtin", "rewrite", ("cse", "diag_broadcast"), ("inductor", "tf32"))
    assert o.has("tf32") and o.compiled and not o.replays_graph and not o.is_baseline
    # a pass's name is not a step: "attention_tf32" does not make the origin a "tf32" one
    assert not Origin.parse("builtin:rewrite(attention_tf32)+inductor").has("tf32")
    assert Origin.parse("baseline:inductor-max-autotune").compiled
    assert not Origin.parse("builtin:aoti").compiled
    assert Origin.parse("baseline:inductor-reduce-overhead").replays_graph
    assert Origin.parse("builtin:inductor+cudagraph").replays_graph
    assert Origin.parse("baseline:eager").is_baseline
    assert str(Origin.sampled("openai", 1, 0)) == "openai:r1s0"


def test_wrapped_keeps_the_built_in_engines_names():
    assert str(Origin.parse("baseline:inductor").wrapped("cudagraph")) == "builtin:inductor+cudagraph"
    assert str(Origin.parse("builtin:rewrite(cse)+inductor").wrapped("cudagraph")) == \
        "builtin:rewrite(cse)+inductor+cudagraph"
    assert str(Origin.parse("openai:r1s0").wrapped("cudagraph")) == "builtin:openai:r1s0+cudagraph"


def test_a_candidate_keeps_the_text_and_offers_the_structure():
    c = Candidate("src", Origin.builtin("tf32", "inductor"))
    assert c.origin == "builtin:tf32+inductor" and isinstance(c.origin, str)
    assert c.identity == Origin("builtin", "tf32", (), ("inductor",))
    assert Candidate.from_json(c.to_json()).origin == c.origin
    assert "identity" not in c.to_json()
