"""hako: a Pythonic layer over hakopy (Hakoniwa's Python API on hako).

    import hako

    with hako.Asset("ctrl", "pdudef.json", delta_usec=1000, model=hako.CONTROLLER) as a:
        @a.on_step
        def step():
            a.write("Robot", "cmd", {"linear": {"x": 1.0}})

        a.run()

``hako.Asset`` registers, steps and unregisters an asset; ``hako.pdu`` reads and writes PDUs
as dicts through the registry's types; ``hako.Conductor``, ``hako.attach`` and the
``*_simulation`` calls drive the domain. Failures raise ``hako.HakoError`` with the C API's
reason (``hakopy.last_error()``). hakopy itself stays as Hakoniwa has it.
"""

from . import pdu
from ._asset import CONTROLLER, PLANT, Asset
from ._control import (Attachment, Conductor, attach, detach, domain_name, reset_simulation,
                       start_simulation, stop_simulation)
from ._pdu import HakoError

__all__ = [
    "CONTROLLER",
    "PLANT",
    "Asset",
    "Attachment",
    "Conductor",
    "HakoError",
    "attach",
    "detach",
    "domain_name",
    "pdu",
    "reset_simulation",
    "start_simulation",
    "stop_simulation",
]
