"""The domain around the assets: a conductor in this process, an attachment without an asset,
and the simulation's start, stop and reset."""

from __future__ import annotations

import os
from types import TracebackType
from typing import Optional, Type

import hakopy

from . import _pdu
from ._pdu import HakoError


def domain_name() -> str:
    """The domain this process uses: $HAKO_DOMAIN, or "default"."""
    return os.environ.get("HAKO_DOMAIN") or "default"


class Conductor:
    """The master of the domain $HAKO_DOMAIN in a thread of this process
    (hakopy.conductor_start); stopping it removes the domain.

        with hako.Conductor(delta_usec=1000, max_delay_usec=10000):
            ...
    """

    def __init__(self, delta_usec: int, max_delay_usec: int) -> None:
        self.delta_usec = delta_usec
        self.max_delay_usec = max_delay_usec
        self.running = False

    def start(self) -> "Conductor":
        """HakoError if it cannot start (a live conductor has the domain, a bad
        HAKO_CORE_CONFIG, ...: the log says which)."""
        if not hakopy.conductor_start(self.delta_usec, self.max_delay_usec):
            raise HakoError(f"conductor_start({self.delta_usec}, {self.max_delay_usec}) "
                            f"failed for domain '{domain_name()}' (the log says why)")
        self.running = True
        return self

    def stop(self) -> None:
        if self.running:
            self.running = False
            hakopy.conductor_stop()

    def __enter__(self) -> "Conductor":
        return self.start()

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.stop()


class Attachment:
    """The process in the domain without an asset (``hako.attach()``): PDUs read and written,
    the simulation started and stopped. As a context manager it detaches at the end if it was
    what attached."""

    def __init__(self) -> None:
        self._owned = not _pdu.attached()
        _pdu.attach()

    def __enter__(self) -> "Attachment":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        if self._owned and not _pdu.registered():
            detach()


def attach() -> Attachment:
    """Join the domain of $HAKO_DOMAIN without an asset (a no-op when this process is in it
    already). HakoError if no conductor runs for it."""
    return Attachment()


def detach() -> None:
    """Leave the domain: unregisters this process's asset too, if it has one."""
    _pdu.unregister()


def _trigger(event: int) -> None:
    if not hakopy.trigger_event(event):
        raise HakoError(hakopy.last_error())


def start_simulation() -> None:
    """Ask the domain to start (Stopped -> Runnable; Running once every asset acknowledged).
    Needs the process in the domain (an asset or ``attach()``); returns without waiting."""
    _trigger(hakopy.HAKO_TRIGGER_EVENT_ID_START)


def stop_simulation() -> None:
    """Ask the domain to stop (Running -> Stopping -> Stopped); returns without waiting."""
    _trigger(hakopy.HAKO_TRIGGER_EVENT_ID_STOP)


def reset_simulation() -> None:
    """Ask the stopped domain to reset its clocks and PDUs (or leave the error state)."""
    _trigger(hakopy.HAKO_TRIGGER_EVENT_ID_RESET)
