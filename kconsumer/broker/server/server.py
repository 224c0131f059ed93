"""`ReferenceServer`: the reference cluster's asyncio TCP listener.

It accepts connections on (by default) 127.0.0.1 and a free port, serves each with a
`Connection`, and owns the `Broker` they all share. Use it from a running event loop::

    server = ReferenceServer(ServerConfig(port=9092))
    await server.start()
    ...
    await server.stop()

`kconsumer.testing.ReferenceCluster` runs one in a background thread; ``kconsumer serve`` runs
one in the foreground.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from .broker import Broker
from .config import ServerConfig, TlsListener
from .connection import Connection, ConnectionInfo
from .metadata import Endpoint

logger = logging.getLogger("kconsumer.broker.server")


class ReferenceServer:
    """A Kafka-wire-compatible broker with one node, in memory (see the module docstring)."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig()
        self._server: asyncio.Server | None = None
        self._broker: Broker | None = None
        self._connections: dict[Connection, asyncio.Task[None]] = {}
        #: Client connections accepted since start (a reconnect storm shows here).
        self.accepted_connections = 0
        self.port = self.config.port

    @property
    def broker(self) -> Broker:
        """The request handling state (topics, coordinator, faults). Only valid once started."""
        if self._broker is None:
            raise RuntimeError("the server is not started")
        return self._broker

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for clients."""
        return f"{self.config.advertised}:{self.port}"

    @property
    def connection_count(self) -> int:
        """Client connections currently open."""
        return len(self._connections)

    def connection_security(self) -> list[ConnectionInfo]:
        """Each open client connection's peer, client id, security protocol and principal."""
        return [
            ConnectionInfo(c.peer, c.client_id, c.security_protocol, c.principal, c.authentications)
            for c in self._connections
        ]

    async def start(self) -> None:
        """Bind, listen and start accepting connections."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(
            self._accept,
            self.config.host,
            self.config.port,
            start_serving=False,
            reuse_address=True,
            ssl=_tls_context(self.config.tls),
            ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if self.config.tls is not None else None,
        )
        self.port = server.sockets[0].getsockname()[1]
        endpoint = Endpoint(self.config.advertised, self.port, self.config.cluster_id)
        self._broker = Broker(self.config, endpoint, loop)
        self._server = server
        await server.start_serving()
        logger.info("reference cluster listening on %s:%d", self.config.host, self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(
            self.broker, reader, writer, self.config.max_frame_bytes, sasl=self.config.sasl
        )
        task = asyncio.current_task()
        assert task is not None
        self._connections[connection] = task
        self.accepted_connections += 1
        logger.debug("connection from %s", connection.peer)
        try:
            await connection.serve()
        except asyncio.CancelledError:
            # Dropped or stopping. This is the task's top level: finishing normally (rather than
            # as cancelled) keeps asyncio's stream machinery from logging the cancellation.
            connection.close(abort=True)
        except Exception:  # serve() handles the expected failures; this is a last resort
            logger.exception("connection %s failed", connection.peer)
            connection.close(abort=True)
        finally:
            self._connections.pop(connection, None)

    def drop_connections(self) -> int:
        """Close every client connection at once (as a broker restart or network cut would).
        Returns how many there were. The server keeps accepting new ones."""
        count = self._close_connections()
        if count:
            logger.info("dropped %d client connection(s)", count)
        return count

    def _close_connections(self) -> int:
        count = 0
        for connection, task in list(self._connections.items()):
            connection.close(abort=True)
            task.cancel()
            count += 1
        return count

    async def stop(self) -> None:
        """Stop accepting, close every connection and the coordinator's timers."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        tasks = list(self._connections.values())
        self._close_connections()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()
        if self._broker is not None:
            self._broker.close()
        logger.info("reference cluster on port %d stopped", self.port)


#: A client that has not completed the TLS handshake by then is disconnected.
TLS_HANDSHAKE_TIMEOUT_S = 10.0


def _tls_context(tls: TlsListener | None) -> ssl.SSLContext | None:
    """The listener's TLS context; a failed handshake (garbage, an untrusted client certificate)
    closes only that connection (asyncio logs it)."""
    if tls is None:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(tls.certificate, tls.key)
    if tls.client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(tls.client_ca)
    return context
