"""PDUs as dicts.

A PDU is a dict of its type's fields (the type's .msg, as hako's registry reads it): nested
types are dicts, arrays are lists (uint8[] also bytes), strings str, bool bool, every integer
width int, float32 and float64 float. Names resolve through the pdudef files loaded here
(``load``, or the one an ``hako.Asset`` registers with) to a robot's channel and type; the
conversion itself is ``hako._pdu``, in C, through the registry's codec.

    hako.pdu.load("pdudef.json")
    hako.pdu.write("Robot", "cmd", {"linear": {"x": 1.0}})
    v = hako.pdu.read("Robot", "pos")["linear"]["x"]

Reading and writing a channel needs the process in a domain: an asset registered
(``hako.Asset``) or an attachment (``hako.attach()``). ``encode`` and ``decode`` need neither.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

import hakopy

from . import _pdu
from ._pdu import Field, HakoError, MsgType

__all__ = [
    "Field",
    "MsgType",
    "Pdu",
    "PduInfo",
    "Pdudef",
    "add_msg_path",
    "decode",
    "encode",
    "find",
    "load",
    "loaded",
    "msg_type",
    "pdu",
    "read",
    "type_names",
    "unload",
    "write",
    "zero",
]

PathLike = Union[str, "os.PathLike[str]"]
TypeLike = Union[str, MsgType]
"""A PDU type: its name ("geometry_msgs/Twist") or the MsgType."""


def msg_type(name: TypeLike) -> MsgType:
    """The type "pkg/Type" from the folders of $HAKO_MSG_PATH or the built-in packages.

    LookupError if none has it, ValueError if its .msg (or a nested one) is malformed."""
    if isinstance(name, MsgType):
        return name
    return _pdu.msg_type(name)


def type_names() -> List[str]:
    """Every type name the search path and the built-in packages provide, sorted."""
    return _pdu.type_names()


def add_msg_path(directory: PathLike) -> None:
    """Search ``directory`` (``<pkg>/<Type>.msg`` or ``<pkg>/msg/<Type>.msg``) before the
    folders already searched. Types already loaded stay as they are."""
    _pdu.add_msg_path(directory)


def encode(type: TypeLike, value: Dict[str, Any]) -> bytes:
    """The PDU bytes (Hakoniwa's binary layout) of ``value``, a dict of the type's fields.

    Missing fields are zero. TypeError for a value of the wrong kind, ValueError for an
    unknown field, a number out of range, a string too long (127 bytes of UTF-8) or a fixed
    array of another length; the message names the field path (``points[1].x: ...``)."""
    return _pdu.encode(msg_type(type), value)


def decode(type: TypeLike, data: Union[bytes, bytearray, memoryview], *,
           bytes_arrays: bool = False) -> Dict[str, Any]:
    """The dict of a PDU's bytes, which are validated first (ValueError naming the field
    path). All-zero meta (a channel never written) gives the type's zero value.
    ``bytes_arrays``: uint8[], byte[] and char[] as bytes instead of lists of int."""
    return _pdu.decode(msg_type(type), data, bytes_arrays=bytes_arrays)


def zero(type: TypeLike, *, bytes_arrays: bool = False) -> Dict[str, Any]:
    """The type's zero value: numbers 0, bools False, strings "", variable arrays empty."""
    return _pdu.zero(msg_type(type), bytes_arrays=bytes_arrays)


class PduInfo(NamedTuple):
    """A PDU of a pdudef: its robot, short name, type, channel and size in bytes."""

    robot: str
    name: str
    type: str
    channel_id: int
    size: int


class Pdudef:
    """A pdudef file (Hakoniwa's legacy or compact form): which PDUs each robot has.

    FileNotFoundError if it (or a pdutypes file it names) is missing, ValueError if it is
    malformed; the message says file, line and column."""

    def __init__(self, path: PathLike) -> None:
        self.path: str = os.fspath(path)
        self.pdus: Tuple[PduInfo, ...] = tuple(PduInfo(*p) for p in _pdu.load_pdudef(self.path))
        self._by_name = {(p.robot, p.name): p for p in self.pdus}
        self._by_id = {(p.robot, p.channel_id): p for p in self.pdus}

    @property
    def robots(self) -> List[str]:
        """The robots, in file order."""
        return list(dict.fromkeys(p.robot for p in self.pdus))

    def find(self, robot: str, pdu: Union[str, int]) -> Optional[PduInfo]:
        """The PDU of ``robot`` by short name or channel id, or None."""
        if isinstance(pdu, str):
            return self._by_name.get((robot, pdu))
        return self._by_id.get((robot, pdu))

    def __iter__(self) -> Iterator[PduInfo]:
        return iter(self.pdus)

    def __len__(self) -> int:
        return len(self.pdus)

    def __repr__(self) -> str:
        return f"<hako Pdudef {self.path!r}: {len(self.pdus)} PDUs>"


_loaded: List[Pdudef] = []


def load(path: Union[PathLike, Pdudef]) -> Pdudef:
    """Load a pdudef so that ``read``, ``write`` and ``pdu`` resolve its names. The newest
    loaded comes first; loading a file again replaces it."""
    d = path if isinstance(path, Pdudef) else Pdudef(path)
    real = os.path.realpath(d.path)
    _loaded[:] = [d] + [x for x in _loaded if os.path.realpath(x.path) != real]
    return d


def unload(pdudef: Optional[Pdudef] = None) -> None:
    """Forget one loaded pdudef, or all of them."""
    if pdudef is None:
        _loaded.clear()
    else:
        _loaded[:] = [x for x in _loaded if x is not pdudef]


def loaded() -> List[Pdudef]:
    """The loaded pdudefs, newest first."""
    return list(_loaded)


def find(robot: str, pdu: Union[str, int]) -> PduInfo:
    """The PDU of ``robot`` by short name or channel id in the loaded pdudefs (LookupError if
    none has it)."""
    for d in _loaded:
        info = d.find(robot, pdu)
        if info is not None:
            return info
    where = ", ".join(d.path for d in _loaded) or "none loaded: hako.pdu.load(path) first"
    raise LookupError(f"no PDU {pdu!r} of robot {robot!r} in the pdudefs ({where})")


def _resolve(robot: str, pdu: Union[str, int], type: Optional[TypeLike],
             defs: Optional[Pdudef] = None) -> Tuple[int, MsgType, str]:
    """(channel id, type, short name) of a PDU named in ``defs`` or the loaded pdudefs."""
    if not isinstance(pdu, str) and type is not None:
        info = defs.find(robot, pdu) if defs is not None else None
        for d in _loaded:
            info = info or d.find(robot, pdu)
        return pdu, msg_type(type), info.name if info is not None else str(pdu)
    info = (defs.find(robot, pdu) if defs is not None else None) or find(robot, pdu)
    return info.channel_id, msg_type(type if type is not None else info.type), info.name


def read(robot: str, pdu: Union[str, int], *, type: Optional[TypeLike] = None,
         bytes_arrays: bool = False) -> Dict[str, Any]:
    """The latest PDU of a channel as a dict. ``pdu``: the PDU's short name or channel id in
    the loaded pdudefs; ``type`` overrides the pdudef's (and with a channel id, no pdudef is
    needed). A channel never written reads as the zero value. HakoError when the process is
    in no domain or the channel does not exist."""
    channel_id, t, _ = _resolve(robot, pdu, type)
    return _pdu.read(t, robot, channel_id, bytes_arrays=bytes_arrays)


def write(robot: str, pdu: Union[str, int], value: Dict[str, Any], *,
          type: Optional[TypeLike] = None) -> None:
    """Encode ``value`` (as ``encode``) and write it to the channel. ValueError as ``encode``
    says, and when the PDU is larger than the channel."""
    channel_id, t, _ = _resolve(robot, pdu, type)
    _pdu.write(t, robot, channel_id, value)


RecvCallback = Callable[["Pdu"], Any]


class Pdu:
    """One PDU of a robot: a channel and its type. ``hako.pdu.pdu(robot, name)`` or
    ``Asset.pdu(robot, name)`` make one.

        cmd = asset.pdu("Robot", "cmd")
        cmd.write({"linear": {"x": 0.5}})

        @asset.pdu("Robot", "sensor").on_recv
        def got(p): print(p.read())
    """

    def __init__(self, robot: str, name: str, channel_id: int, type: TypeLike,
                 owner: Any = None) -> None:
        self.robot = robot
        self.name = name
        self.channel_id = channel_id
        self.type: MsgType = msg_type(type)
        self.recv_event_id: Optional[int] = None
        self._recv: Optional[RecvCallback] = None
        self._watching = False
        self._owner = owner  # an Asset: it keeps a callback's exception for run()

    def read(self, *, bytes_arrays: bool = False) -> Dict[str, Any]:
        """The channel's latest PDU as a dict (``hako.pdu.read``)."""
        return _pdu.read(self.type, self.robot, self.channel_id, bytes_arrays=bytes_arrays)

    def write(self, value: Dict[str, Any]) -> None:
        """Write ``value`` to the channel (``hako.pdu.write``)."""
        _pdu.write(self.type, self.robot, self.channel_id, value)

    def on_recv(self, fn: RecvCallback) -> RecvCallback:
        """Decorator: call ``fn(pdu)`` at the start of the step after each write to the
        channel (hakopy.register_data_recv_event). Needs the process in a domain."""
        self._recv = fn
        self._register_recv()
        return fn

    def updated(self) -> bool:
        """True once after each write to the channel (hakopy.check_data_recv_event). The
        first call starts watching, and says False."""
        if not self._watching:
            self._register_flag()
            self._watching = True
            return False
        return bool(hakopy.check_data_recv_event(self.robot, self.channel_id))

    def _register_recv(self) -> None:
        fn = self._recv
        owner = self._owner

        def call(_event_id: int) -> None:
            try:
                assert fn is not None
                fn(self)
            except Exception as e:
                if owner is not None:
                    owner._note_error(e)
                raise

        try:
            self.recv_event_id = hakopy.register_data_recv_event(self.robot, self.channel_id,
                                                                 call)
        except RuntimeError:
            raise HakoError(hakopy.last_error()) from None
        if owner is not None:
            owner._track(self)

    def _register_flag(self) -> None:
        try:
            hakopy.register_data_recv_event(self.robot, self.channel_id, None)
        except RuntimeError:
            raise HakoError(hakopy.last_error()) from None
        if self._owner is not None:
            self._owner._track(self)

    def _reregister(self) -> None:
        """After the owner registered again: the events it had are gone."""
        if self._recv is not None:
            self._register_recv()
        if self._watching:
            self._register_flag()

    def __repr__(self) -> str:
        return (f"<hako Pdu {self.robot}/{self.name} channel {self.channel_id} "
                f"{self.type.name}>")


def pdu(robot: str, name: Union[str, int], *, type: Optional[TypeLike] = None) -> Pdu:
    """A Pdu handle for a PDU of the loaded pdudefs (or any channel, given its id and type)."""
    channel_id, t, short = _resolve(robot, name, type)
    return Pdu(robot, short, channel_id, t)
