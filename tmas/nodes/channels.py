"""State channels of plugins: named values beside the run's own state, each with a reducer.

A plugin registers a channel (:func:`register_channel`), or a topology declares one in its
``channels:`` block::

    channels:
      critiques: {reducer: keyed, per_iteration: true}

Reducers: ``append`` (a list; parallel writers' items are all kept, the newest ``cap`` of
them), ``keyed`` (a mapping; each write's keys replace the same keys, e.g. one entry per
candidate index as a string) and ``replace`` (the last write wins). A ``per_iteration``
channel is emptied when an iteration opens (after its planner read it). Nodes write a channel
by returning ``{name: value}``; a fan-out hands a channel to its tasks with
``fanout: {tasks: ..., with: {field: channel}}``; planners (``request.channels``), stop
conditions (the state) and selection rules (``channels=``) read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal, TypedDict, get_type_hints

from tmas.registration import declare, owner_of
from tmas.state import RESET, RunState, merge_keyed, merge_per_iteration

Reducer = Literal["append", "keyed", "replace"]
RUN_STATE_KEYS = frozenset(get_type_hints(RunState))
"""The run's own state keys: no channel may take one of these names."""


@dataclass(frozen=True)
class ChannelSpec:
    """One channel: its name, reducer, whether it empties each iteration, and (append) how many
    items it keeps."""

    name: str
    reducer: Reducer = "replace"
    per_iteration: bool = False
    cap: int = 256
    description: str = ""

    def merge(self) -> Callable[[Any, Any], Any]:
        """The reducer function LangGraph merges this channel's writes with.

        Example:
            >>> ChannelSpec("notes", "append", cap=2).merge()(["a"], ["b", "c"])
            ['b', 'c']
            >>> ChannelSpec("marks", "keyed").merge()({"0": "x"}, {"1": "y"})
            {'0': 'x', '1': 'y'}
        """
        if self.reducer == "append":
            cap = self.cap
            return lambda left, right: merge_per_iteration(left, _items(right))[-cap:]
        if self.reducer == "keyed":
            return merge_keyed
        return replace_value

    def reset(self) -> Any:
        """The write that empties this channel.

        Example:
            >>> ChannelSpec("notes", "append").reset(), ChannelSpec("marks", "keyed").reset()
            ([{'__reset__': True}], {'__reset__': True})
        """
        return [RESET] if self.reducer == "append" else RESET

    def record(self) -> dict[str, Any]:
        """This channel as plain data (what a run's plan saves)."""
        return {k: v for k, v in asdict(self).items() if k != "name"}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def replace_value(left: Any, right: Any) -> Any:
    """Reducer of a ``replace`` channel: the last write wins; ``RESET`` empties it (None).

    Example:
        >>> replace_value("old", "new"), replace_value("old", RESET)
        ('new', None)
    """
    return None if right == RESET else right


BUILTIN_CHANNELS: dict[str, ChannelSpec] = {
    "extras": ChannelSpec(
        "extras",
        "keyed",
        description="the channel every run has: what nodes (a plugin's, the proof grade, an "
        "agent chain's records) keep under keys of their choosing",
    )
}
"""The channels every run has, whatever its topology declares (``extras``)."""


def register_channel(
    name: str,
    *,
    reducer: Reducer = "replace",
    per_iteration: bool = False,
    cap: int = 256,
    description: str = "",
) -> ChannelSpec:
    """Declare channel ``name`` (in :func:`tmas.registration.registry`) for every topology whose
    nodes read or write it (node types list it in ``reads``/``writes``, a fan-out in
    ``with``); declaring it again the same way is harmless, another way by another module is
    refused.

    Example:
        >>> register_channel("doc_rankings", reducer="keyed").reducer
        'keyed'
        >>> register_channel("candidates")
        Traceback (most recent call last):
        ...
        ValueError: 'candidates' is a key of the run's state; name the channel otherwise
    """
    spec = channel_spec(name, reducer=reducer, per_iteration=per_iteration, cap=cap,
                        description=description)  # fmt: skip
    return declare("channels", name, spec, owner_of(spec))


def channel_spec(name: str, **settings: Any) -> ChannelSpec:
    """A checked :class:`ChannelSpec`; ValueError for a name of the run's state, an unknown
    reducer or a cap below 1.

    Example:
        >>> channel_spec("votes", reducer="sum")
        Traceback (most recent call last):
        ...
        ValueError: channel 'votes': reducer must be append, keyed or replace, not 'sum'
    """
    if name in RUN_STATE_KEYS or name in BUILTIN_CHANNELS:
        raise ValueError(f"{name!r} is a key of the run's state; name the channel otherwise")
    if not name.isidentifier():
        raise ValueError(f"a channel name is a Python identifier, not {name!r}")
    spec = ChannelSpec(name, **settings)
    if spec.reducer not in ("append", "keyed", "replace"):
        raise ValueError(
            f"channel {name!r}: reducer must be append, keyed or replace, not {spec.reducer!r}"
        )
    if spec.cap < 1:
        raise ValueError(f"channel {name!r}: cap must be at least 1, not {spec.cap}")
    return spec


def state_schema(channels: Mapping[str, ChannelSpec], base: type = RunState) -> type:
    """``base`` (the run's state, or a chain's output) with ``channels`` added, each under its
    reducer: the schema a topology's graph is compiled with.

    Example:
        >>> schema = state_schema({"marks": ChannelSpec("marks", "keyed")})
        >>> "marks" in get_type_hints(schema) and "candidates" in get_type_hints(schema)
        True
    """
    if not channels:
        return base
    fields = dict(get_type_hints(base, include_extras=True))
    for name, spec in channels.items():
        fields[name] = Annotated[Any, spec.merge()]
    return TypedDict(f"{base.__name__}WithChannels", fields, total=False)  # type: ignore[operator]


def channel_values(state: Mapping[str, Any], channels: Mapping[str, ChannelSpec]) -> dict:
    """The values of ``channels`` in ``state`` (None where nothing was written).

    Example:
        >>> channel_values({"marks": {"0": "ok"}}, {"marks": ChannelSpec("marks", "keyed")})
        {'marks': {'0': 'ok'}}
    """
    return {name: state.get(name) for name in channels}


def iteration_resets(channels: Mapping[str, ChannelSpec]) -> dict[str, Any]:
    """The writes that empty every ``per_iteration`` channel (when an iteration opens).

    Example:
        >>> iteration_resets({"a": ChannelSpec("a", "keyed", per_iteration=True),
        ...                   "b": ChannelSpec("b")})
        {'a': {'__reset__': True}}
    """
    return {name: spec.reset() for name, spec in channels.items() if spec.per_iteration}


for _spec in BUILTIN_CHANNELS.values():
    declare("channels", _spec.name, _spec, __name__)
