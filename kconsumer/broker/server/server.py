"""`ReferenceServer`: the reference cluster's asyncio TCP listeners.

`ServerConfig.brokers` brokers (node ids 1..N) run in one process over one shared `Broker` (the
topics, the coordinator shards, the metadata view): each listens on its own port per listener (the
main one, plus `ServerConfig.extra_listeners`), on 127.0.0.1 by default, and serves each connection
with a `Connection` that knows which broker and listener it reached. Use it from a running event
loop::

    server = ReferenceServer(ServerConfig(port=9092))
    await server.start()
    ...
    await server.stop()

`stop_node` / `start_node` take one broker down (its listeners close, so connections are refused,
its connections drop, and its leadership moves) and back up on the same ports.
`kconsumer.testing.ReferenceCluster` runs one in a background thread; ``kconsumer serve`` runs
one in the foreground.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl

from .broker import Broker
from .config import Listener, ServerConfig, TlsListener
from .connection import Connection, ConnectionInfo

logger = logging.getLogger("kconsumer.broker.server")


class ReferenceServer:
    """A Kafka-wire-compatible cluster of `config.brokers` brokers, in memory (see the module
    docstring)."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig()
        self._servers: dict[tuple[int, str], asyncio.Server] = {}
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
        """``host:port`` of every broker on the main listener, comma-separated, for clients."""
        return self.bootstrap_for(self.config.listeners()[0].name)

    def bootstrap_for(self, listener: str) -> str:
        """``host:port,...`` of every broker on `listener`."""
        nodes = self.broker.nodes
        ports = [nodes.port(node_id, listener) for node_id in nodes.ids]
        if any(port is None for port in ports):
            names = [known.name for known in self.config.listeners()]
            raise KeyError(f"no listener {listener!r} (listeners: {names})")
        return ",".join(f"{self.config.advertised}:{port}" for port in ports)

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
        """Bind, listen and start accepting connections on every broker."""
        if self._broker is not None:
            raise RuntimeError("the server is already started")
        self._broker = Broker(self.config, asyncio.get_running_loop())
        for node_id in self._broker.nodes.ids:
            await self._listen(node_id)
        self.port = self._broker.nodes.port(1, self.config.listeners()[0].name) or 0
        logger.info("reference cluster listening on %s", self.bootstrap_servers)

    async def _listen(self, node_id: int) -> None:
        node = self.broker.nodes.nodes[node_id]
        for listener in self.config.listeners():
            port = node.ports.get(listener.name)
            if port is None:  # first start: the configured port for broker 1 (then the next ones)
                port = listener.port + node_id - 1 if listener.port else 0
            server = await asyncio.start_server(
                functools.partial(self._accept, node_id=node_id, listener=listener),
                self.config.host,
                port,
                reuse_address=True,
                ssl=_tls_context(listener.tls),
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if listener.tls is not None else None,
            )
            node.ports[listener.name] = server.sockets[0].getsockname()[1]
            self._servers[(node_id, listener.name)] = server

    async def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, node_id: int, listener: Listener
    ) -> None:
        connection = Connection(
            self.broker,
            reader,
            writer,
            self.config.max_frame_bytes,
            sasl=listener.sasl,
            node_id=node_id,
            listener=listener.name,
        )
        task = asyncio.current_task()
        assert task is not None
        self._connections[connection] = task
        self.accepted_connections += 1
        logger.debug("connection from %s to broker %d (%s)", connection.peer, node_id, listener.name)
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

    async def stop_node(self, node_id: int) -> None:
        """Take broker `node_id` down: stop listening (new connections are refused), drop its
        connections, move the leadership it held to the brokers still up."""
        broker = self.broker
        if not broker.nodes.is_up(node_id):
            raise ValueError(f"broker {node_id} is not up")
        servers = [self._servers.pop(key) for key in list(self._servers) if key[0] == node_id]
        for server in servers:
            server.close()
        self._close_connections(node_id)
        for server in servers:
            await server.wait_closed()
        broker.node_stopped(node_id)

    async def start_node(self, node_id: int) -> None:
        """Bring broker `node_id` back on the ports it had."""
        broker = self.broker
        if node_id not in broker.nodes.nodes or broker.nodes.is_up(node_id):
            raise ValueError(f"broker {node_id} is not a stopped broker of this cluster")
        await self._listen(node_id)
        broker.node_started(node_id)

    def drop_connections(self, node_id: int | None = None) -> int:
        """Close every client connection (of broker `node_id`, or of all) at once, as a broker
        restart or network cut would. Returns how many there were; the brokers keep accepting."""
        count = self._close_connections(node_id)
        if count:
            logger.info("dropped %d client connection(s)", count)
        return count

    def _close_connections(self, node_id: int | None = None) -> int:
        count = 0
        for connection, task in list(self._connections.items()):
            if node_id is None or connection.node_id == node_id:
                connection.close(abort=True)
                task.cancel()
                count += 1
        return count

    async def stop(self) -> None:
        """Stop accepting, close every connection and the coordinator's timers."""
        servers, self._servers = list(self._servers.values()), {}
        if self._broker is None:
            return
        for server in servers:
            server.close()
        tasks = list(self._connections.values())
        self._close_connections()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for server in servers:
            await server.wait_closed()
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
