"""The engine's pure parts: stop strings over streamed bytes, the slot table, settings."""

from __future__ import annotations

import pytest

from tmas.llm.engine import EngineSettings
from tmas.llm.engine.request import StopText
from tmas.llm.engine.slots import SlotTable, shared_length
from tmas.llm.engine.stats import EngineStats


def test_stop_string_split_over_pieces_is_never_shown() -> None:
    text = StopText(["</answer>"])
    shown = [text.feed(piece) for piece in (b"42 </", b"ans", b"wer> trailing")]
    assert "".join(shown) == "42 "
    assert text.text == "42 " and text.stopped


def test_text_that_only_looked_like_a_stop_is_released() -> None:
    text = StopText(["###"])
    assert text.feed(b"a #") == "a "
    assert text.feed(b"# b") == "## b"
    assert text.feed(b"", final=True) == ""
    assert text.text == "a ## b" and not text.stopped


def test_utf8_split_across_tokens_decodes_whole() -> None:
    text = StopText([])
    euro = "€".encode()
    assert text.feed(euro[:1]) == ""
    assert text.feed(euro[1:]) == "€"


def test_final_flush_shows_held_text() -> None:
    text = StopText(["STOP"])
    assert text.feed(b"go ST") == "go "
    assert text.feed(b"", final=True) == "ST"


def test_shared_length() -> None:
    assert shared_length([], [1]) == 0
    assert shared_length([1, 2, 3], [1, 2, 3]) == 3
    assert shared_length([1, 2, 3, 4], [1, 2, 9, 4]) == 2
    assert shared_length(list(range(1000)), [*range(700), -1]) == 700


def test_slot_table_prefers_longest_prefix_then_idle() -> None:
    table = SlotTable(3)
    table.slots[0].tokens, table.slots[0].busy = [1, 2, 3], True
    table.slots[1].tokens = [1, 2, 3]
    table.slots[2].tokens = [1, 2]
    slot, length = table.longest_prefix([1, 2, 3, 4])
    assert (slot.seq_id, length) == (1, 3)
    assert table.longest_prefix([9]) == (None, 0)


def test_take_free_uses_empty_slots_before_evicting_the_oldest_cache() -> None:
    table = SlotTable(3)
    table.slots[0].tokens = [1]
    table.slots[0].touch()
    table.slots[1].tokens = [2]
    table.slots[1].touch()
    assert table.take_free().seq_id == 2
    table.slots[2].busy = True
    assert table.take_free().seq_id == 0
    assert [s.seq_id for s in table.idle_cached()] == [0, 1]
    for slot in table.slots:
        slot.busy = True
    assert table.take_free() is None


def test_settings_reject_a_unified_cache_smaller_than_one_request() -> None:
    with pytest.raises(ValueError, match="at least n_ctx"):
        EngineSettings("m.gguf", n_ctx=4096, kv_unified=True, kv_cells=1024)
    assert (
        EngineSettings("m.gguf", n_ctx=1024, kv_unified=True, kv_cells=2048).total_cells() == 2048
    )
    assert EngineSettings("m.gguf", n_ctx=1024, max_sequences=4).total_cells() == 4096


def test_stats_rates() -> None:
    stats = EngineStats()
    stats.admitted(200, 50)
    stats.step(8, 0, 0.1)
    stats.step(2, 100, 0.5)
    snap = stats.snapshot()
    assert snap["prefix_hit_rate"] == 0.25
    assert snap["decode_tokens_per_s"] == 80.0
    assert snap["prefill_tokens_per_s"] == 200.0
    assert snap["max_batch_sequences"] == 8
    assert snap["decode_widths"] == {8: [1, 0.1]}
