"""One connection per broker address, opened on first use and reopened after it closed."""

from __future__ import annotations

import asyncio
import ssl

from .authentication import SaslAuthenticator
from .connection import Address, BrokerConnection


class Connections:
    """The member's connections to the brokers (no protocol decisions: the session makes them)."""

    def __init__(
        self,
        client_id: str,
        connect_timeout_s: float,
        request_timeout_s: float,
        tls: ssl.SSLContext | None = None,
        sasl: SaslAuthenticator | None = None,
    ) -> None:
        self.client_id = client_id
        self.tls = tls
        self.sasl = sasl
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self._connections: dict[Address, BrokerConnection] = {}
        self._opening: dict[Address, asyncio.Future[BrokerConnection]] = {}

    async def get(self, address: Address) -> BrokerConnection:
        """A live connection to `address` (opened if needed; concurrent callers share one
        attempt). Raises TransportError when it cannot be opened, AuthenticationFailedError when
        SASL authentication fails."""
        existing = self._connections.get(address)
        if existing is not None and not existing.closed:
            return existing
        opening = self._opening.get(address)
        if opening is None:
            opening = asyncio.ensure_future(
                BrokerConnection.open(
                    address,
                    self.client_id,
                    self.connect_timeout_s,
                    self.request_timeout_s,
                    self.tls,
                    self.sasl,
                )
            )
            self._opening[address] = opening
            try:
                connection = await opening
            finally:
                self._opening.pop(address, None)
            self._connections[address] = connection
            return connection
        return await asyncio.shield(opening)

    def close(self) -> None:
        """Close every connection (requests in flight fail)."""
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()
