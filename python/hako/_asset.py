"""hako.Asset: an asset of the domain, its callbacks, clock and PDUs, over hakopy."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Callable, Dict, List, Optional, Type, TypeVar, Union

import hakopy

from . import _pdu, pdu as _pdus
from ._pdu import HakoError
from .pdu import Pdu, Pdudef, PathLike, TypeLike

PLANT: int = hakopy.HAKO_ASSET_MODEL_PLANT
CONTROLLER: int = hakopy.HAKO_ASSET_MODEL_CONTROLLER

Callback = Callable[[], Any]
F = TypeVar("F", bound=Callback)

# The asset's callbacks: hakopy's key, and the method a subclass overrides.
_HOOKS = {
    "initialize": ("on_initialize", "initialize"),
    "step": ("on_simulation_step", "step"),
    "manual": ("on_manual_timing_control", "manual_timing_control"),
    "reset": ("on_reset", "reset"),
}


class Asset:
    """An asset of the domain named by $HAKO_DOMAIN: registered on ``with`` (or
    ``register()``), stepped by ``run()``, unregistered when the block ends (or ``close()``).

        with hako.Asset("ctrl", "pdudef.json", delta_usec=1000) as a:
            cmd = a.pdu("Robot", "cmd")

            @a.on_step
            def step():
                cmd.write({"linear": {"x": a.time / 1e6}})

            a.run()

    Callbacks take no argument; give them as decorators (``on_initialize``, ``on_step``,
    ``on_manual_timing_control``, ``on_reset``), as keyword arguments, or override the methods
    ``initialize``, ``step``, ``manual_timing_control`` and ``reset`` in a subclass. An asset
    steps one way: ``step`` each step, or ``manual_timing_control`` once, advancing its clock
    itself with ``usleep``. A callback that raises stops the asset (hakopy prints the
    traceback) and ``run()`` raises HakoError from it.
    """

    def __init__(self, name: str, pdudef: Union[PathLike, Pdudef], *, delta_usec: int,
                 model: int = PLANT, on_initialize: Optional[Callback] = None,
                 on_step: Optional[Callback] = None,
                 on_manual_timing_control: Optional[Callback] = None,
                 on_reset: Optional[Callback] = None) -> None:
        if delta_usec < 1:
            raise ValueError(f"delta_usec must be >= 1, not {delta_usec}")
        self.name = name
        self.delta_usec = delta_usec
        self.model = model
        self.pdudef: Pdudef = pdudef if isinstance(pdudef, Pdudef) else Pdudef(pdudef)
        self._callbacks: Dict[str, Optional[Callback]] = {
            "initialize": on_initialize,
            "step": on_step,
            "manual": on_manual_timing_control,
            "reset": on_reset,
        }
        self._check_one_way()
        self._registered = False
        self._manual = False  # registered with on_manual_timing_control
        self._error: Optional[Exception] = None
        self._pdus: List[Pdu] = []  # those with receive events

    # ---- what a subclass overrides ----

    def initialize(self) -> None:
        """Called once when the simulation starts, before the first step."""

    def step(self) -> None:
        """Called at each step of this asset's clock."""

    def manual_timing_control(self) -> None:
        """Called once when the simulation starts; loops, advancing with ``usleep``."""

    def reset(self) -> None:
        """Called when the simulation is reset."""

    # ---- callbacks by decorator ----

    def on_initialize(self, fn: F) -> F:
        """Decorator: ``fn()`` when the simulation starts."""
        self._callbacks["initialize"] = fn
        return fn

    def on_step(self, fn: F) -> F:
        """Decorator: ``fn()`` at each step."""
        self._callbacks["step"] = fn
        self._check_one_way()
        if self._registered and self._manual:
            raise ValueError(f"asset '{self.name}' registered with on_manual_timing_control")
        return fn

    def on_manual_timing_control(self, fn: F) -> F:
        """Decorator: ``fn()`` once when the simulation starts, advancing with ``usleep``.
        After registration this registers the asset again (the C API fixes the way an asset
        steps when it registers): before the simulation starts only."""
        self._callbacks["manual"] = fn
        self._check_one_way()
        if self._registered and not self._manual:
            self._register_again()
        return fn

    def on_reset(self, fn: F) -> F:
        """Decorator: ``fn()`` when the simulation is reset."""
        self._callbacks["reset"] = fn
        return fn

    def _handler(self, which: str) -> Optional[Callback]:
        fn = self._callbacks[which]
        if fn is not None:
            return fn
        method = _HOOKS[which][1]
        if getattr(type(self), method) is not getattr(Asset, method):
            bound: Callback = getattr(self, method)
            return bound
        return None

    def _check_one_way(self) -> None:
        if self._handler("step") is not None and self._handler("manual") is not None:
            raise ValueError(f"asset '{self.name}': a step callback and a manual timing "
                             "control callback; an asset steps one way")

    def _track(self, p: Pdu) -> None:
        """p has receive events: registering again must renew them."""
        if all(x is not p for x in self._pdus):
            self._pdus.append(p)

    def _note_error(self, e: Exception) -> None:
        if self._error is None:
            self._error = e

    def _dispatch(self, which: str) -> Callable[[Any], int]:
        def call(_context: Any) -> int:
            fn = self._handler(which)
            if fn is None:
                return 0
            try:
                fn()
            except Exception as e:
                self._note_error(e)
                raise
            return 0

        return call

    # ---- lifecycle ----

    @property
    def registered(self) -> bool:
        """The asset is in the domain (a callback that raised took it out)."""
        return self._registered and _pdu.registered()

    def register(self) -> "Asset":
        """Register in the domain of $HAKO_DOMAIN and create the pdudef's channels.
        HakoError (hakopy.last_error()) if that fails: no conductor, the name taken, ..."""
        if self._registered:
            raise HakoError(f"asset '{self.name}' is registered already")
        manual = self._handler("manual") is not None
        callbacks = {
            "on_initialize": self._dispatch("initialize"),
            "on_reset": self._dispatch("reset"),
        }
        key = "manual" if manual else "step"
        callbacks[_HOOKS[key][0]] = self._dispatch(key)
        if not hakopy.asset_register(self.name, self.pdudef.path, callbacks, self.delta_usec,
                                     self.model):
            raise HakoError(hakopy.last_error())
        self._registered = True
        self._manual = manual
        _pdus.load(self.pdudef)
        return self

    def _register_again(self) -> None:
        _pdu.unregister()
        self._registered = False
        self.register()
        for p in self._pdus:
            p._reregister()

    def run(self) -> None:
        """Run the simulation once (hakopy.start): wait for START, call the callbacks, and
        return after the simulation stopped and was reset. Registers first if needed.
        HakoError if a callback raised (from its exception) or the C API failed; Ctrl-C
        raises KeyboardInterrupt."""
        if not self._registered:
            self.register()
        self._error = None
        ok = hakopy.start()
        error, self._error = self._error, None
        if error is not None:
            raise HakoError(hakopy.last_error()) from error
        if not ok and _pdu.last_error_code() != _pdu.HAKO_EINTR:
            raise HakoError(hakopy.last_error())

    def usleep(self, usec: int) -> bool:
        """Advance this asset's clock by ``usec`` (whole steps, at least one) under the clock
        rules. False once the simulation stops: return from the callback then."""
        return bool(hakopy.usleep(usec))

    def close(self) -> None:
        """Leave the domain (a no-op when not registered)."""
        if self._registered:
            self._registered = False
            if _pdu.registered():
                _pdu.unregister()

    def __enter__(self) -> "Asset":
        if not self._registered:
            self.register()
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.close()

    # ---- clock ----

    @property
    def time(self) -> int:
        """This asset's time, in microseconds."""
        return hakopy.asset_current_time()

    @property
    def world_time(self) -> int:
        """The domain's world time, in microseconds."""
        return hakopy.simulation_time()

    # ---- PDUs ----

    def pdu(self, robot: str, name: Union[str, int], *, type: Optional[TypeLike] = None) -> Pdu:
        """The PDU of ``robot`` named in the asset's pdudef (or another loaded one)."""
        channel_id, t, short = _pdus._resolve(robot, name, type, self.pdudef)
        return Pdu(robot, short, channel_id, t, owner=self)

    def read(self, robot: str, name: Union[str, int], *,
             bytes_arrays: bool = False) -> Dict[str, Any]:
        """The PDU's latest value as a dict."""
        channel_id, t, _ = _pdus._resolve(robot, name, None, self.pdudef)
        return _pdu.read(t, robot, channel_id, bytes_arrays=bytes_arrays)

    def write(self, robot: str, name: Union[str, int], value: Dict[str, Any]) -> None:
        """Write a dict to the PDU."""
        channel_id, t, _ = _pdus._resolve(robot, name, None, self.pdudef)
        _pdu.write(t, robot, channel_id, value)

    def __repr__(self) -> str:
        state = "registered" if self.registered else "not registered"
        return f"<hako Asset {self.name!r} {state}>"
