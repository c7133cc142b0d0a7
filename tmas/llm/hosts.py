"""Where a server listens: loopback or not."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches (``localhost``, 127.0.0.0/8, ``::1``).

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
