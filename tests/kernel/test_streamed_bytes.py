"""A streamed answer's output messages cost bytes in proportion to its length, whatever its
shape: the page shows each block as it comes, and no finished block is sent again and again.

Through a real kernel over ZMQ, a scripted model streams long answers made of lists (a
heading, then bullet and numbered items taking turns, each group a list of its own) and of
code (paragraphs and fenced code). The content of every output message of the cell (what
``session.pack`` puts in the message's content frame) is summed: an answer that was never
cut into segments re-sent itself whole at every update, 20x its size for 40 KB of lists and
55x for code (benchmarks/bench_streaming_shapes.py).
"""

from __future__ import annotations

import itertools
import random

import pytest

pytestmark = pytest.mark.slow

_WORDS = (  # noqa: SIM905 - a sentence reads better than a column of strings
    "the kernel streams each answer into a cell as rendered markdown and the page shows "
    "every block once it is finished while the model goes on writing the next one"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."


def lists_answer(size: int) -> str:
    """A heading, then groups of bullet and numbered items taking turns, numbering running
    on, some steps with bullets of their own."""
    rng = random.Random(7)
    blocks, n = ["# Steps"], 1
    for group in itertools.count():
        items = []
        for _ in range(rng.randint(2, 5)):
            if group % 2:
                item = f"{n}. {_sentence(rng)}"
                item += "".join(f"\n   - {_sentence(rng)}" for _ in range(rng.randint(0, 2)))
                n += 1
            else:
                item = f"- {_sentence(rng)}"
            items.append(item)
        blocks.append("\n".join(items))
        if sum(len(b) + 2 for b in blocks) > size:
            return "\n\n".join(blocks) + "\n"
    raise AssertionError("unreachable")


def code_answer(size: int) -> str:
    rng = random.Random(9)
    blocks: list[str] = []
    while sum(len(b) + 2 for b in blocks) < size:
        lines = [
            f"    total += item.{rng.choice(_WORDS)}({n})  # {rng.choice(_WORDS)}"
            for n in range(rng.randint(4, 12))
        ]
        code = (
            "def step(items):\n    total = 0\n    for item in items:\n"
            + "\n".join(lines)
            + "\n    return total\n"
        )
        blocks += [_sentence(rng), f"```python\n{code}```"]
    return "\n\n".join(blocks) + "\n"


@pytest.mark.parametrize("shape", ["lists", "code"])
def test_a_long_answer_costs_bytes_in_proportion_to_its_length(kernel, model_server, shape):
    answer = (lists_answer if shape == "lists" else code_answer)(20_000)
    model_server.extend([{"text": answer, "tokens_per_second": 2000}])
    result = kernel.execute("Answer at length.", mode="notebook")
    assert result.status == "ok"
    assert result.markdown() == answer, "the cell shows exactly the answer"
    carriers = result.of_type("display_data", "update_display_data")
    size = len(answer.encode())
    pack = kernel.kc.session.pack
    content = sum(len(pack(m["content"])) for m in carriers)
    last = {m["content"]["transient"]["display_id"]: m["content"] for m in carriers}
    saved = sum(len(pack(c)) for c in last.values())
    # Cut into many outputs, each finished block sent as HTML and source once: what the
    # updates before each output's last version add is less than what the notebook keeps.
    assert len(last) > 15, f"{len(last)} outputs"
    added = content - saved
    assert added < saved, (
        f"streaming added {added / size:.1f}x the answer to the {saved / size:.1f}x kept"
    )
    assert model_server.errors == []
